/** The HTTP/JSON API for applications (docs/http.md): the face the composition root uses. */
export { anonymous, type Caller, KeyTable, type Permission } from './auth.ts';
export { type ErrorBody, type HttpErrorCode, httpStatusOf } from './errors.ts';
export { eventToJson, leasedJobToJson, payloadToJson } from './job-json.ts';
export { openApiPath } from './openapi.ts';
export { isJsonContentType, RawJson, stringifyWithRaw } from './raw-json.ts';
export type { ApiContext } from './route-spec.ts';
export { createHttpApi, type HttpApi, type HttpApiOptions, type HttpLog, openApiDocument } from './server.ts';

/** The HTTP/JSON API for applications (docs/http.md): the face the composition root uses. */
export { leasedJobToJson } from './job-json.ts';
export { stringifyWithRaw } from './raw-json.ts';
export { createHttpApi, type HttpApi, openApiDocument } from './server.ts';

/**
 * The protocol features this server has that older ones lack, by name, so that clients can tell
 * before relying on one (admin.proto's GetServerInfoResponse.features; docs/protocol.md,
 * "Features"). Every door that tells clients what the server is says the same list: GetServerInfo,
 * the HTTP API's GET /v1/server-info and the admin dashboard. Names are only ever added.
 */
export const protocolFeatures: readonly string[] = Object.freeze(['nack_give_back', 'work_stop_delivery']);

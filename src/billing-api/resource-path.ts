import { ApiRejectedError } from './api-errors.js';
import type { ResourceType } from './resource-types.js';

/** Longest identifier requested; longer ones are a forged or broken record, not a resource. */
export const MAX_ID_LENGTH = 1024;

/**
 * Encodes an identifier as exactly one path segment (docs/CONTRACT.md property 8): a webhook claiming
 * `ContractId: "../Customers/x"` fetches `Contracts/..%2FCustomers%2Fx` and nothing else.
 * encodeURIComponent leaves '.' alone, so an id that is exactly `.` or `..` would be a dot
 * segment that a proxy or server may resolve (RFC 3986 5.2.4) and climb out of the resource
 * path; those dots are sent as `%2E`. Throws ApiRejectedError for ids that cannot name a
 * resource (empty, too long, lone surrogates): the record that carries them is at fault.
 */
export function encodeResourceId(id: string, type?: ResourceType): string {
  const context = { resourceType: type, resourceId: id.slice(0, 200) };
  if (id === '') throw new ApiRejectedError('empty resource identifier', { context });
  if (id.length > MAX_ID_LENGTH) throw new ApiRejectedError(`resource identifier longer than ${MAX_ID_LENGTH} characters`, { context });
  if (id === '.' || id === '..') return id.replace(/\./g, '%2E');
  try {
    return encodeURIComponent(id);
  } catch (err) {
    // URIError: a lone UTF-16 surrogate has no UTF-8 form, so no URL can name it.
    throw new ApiRejectedError('resource identifier is not valid Unicode', { context, cause: err });
  }
}

/**
 * The request path of one resource: `{base path}/api/v1/{type path}/{encoded id}`. Joined as
 * text, never through `new URL`, whose parser would resolve dot segments.
 */
export function resourcePath(basePath: string, typePath: string, id: string, type?: ResourceType): string {
  return `${collectionPath(basePath, typePath)}/${encodeResourceId(id, type)}`;
}

/** The request path of a resource list: `{base path}/api/v1/{type path}`. */
export function collectionPath(basePath: string, typePath: string): string {
  return `${basePath.replace(/\/+$/, '')}/api/v1/${typePath.replace(/^\/+|\/+$/g, '')}`;
}

import { isIP } from 'node:net';
import { Agent, buildConnector } from 'undici';
import { AppError, ERROR_CODES } from '../shared/errors.js';
import { assertConnectable, blockedReason, guardedLookup, type AddressPolicy } from './address-policy.js';

/**
 * An undici Agent under the webhook address policy, for other outbound calls made on a caller's
 * behalf (credential validation): names resolve through the guarded lookup, IP literals are
 * checked before connecting, and the socket's peer once more after. The same three checks as
 * HttpTransport's, which only POSTs.
 */
export function guardedDispatcher(policy: AddressPolicy): Agent {
  const base = buildConnector({ lookup: guardedLookup(policy) } as buildConnector.BuildOptions);
  const connect: buildConnector.connector = (options, callback) => {
    const host = options.hostname.replace(/^\[|\]$/g, '');
    try {
      if (isIP(host)) assertConnectable(host, policy);
    } catch (e: unknown) {
      callback(e as Error, null);
      return;
    }
    base(options, (error, socket) => {
      const remote = socket?.remoteAddress;
      if (!error && !policy.allowPrivate && remote && blockedReason(remote) !== undefined) {
        socket!.destroy();
        callback(new AppError(ERROR_CODES.blockedAddress, `connected to a non-public address (${blockedReason(remote)})`), null);
        return;
      }
      if (error) callback(error, null);
      else callback(null, socket!);
    });
  };
  return new Agent({ connect, keepAliveTimeout: 4_000, connections: 8 });
}

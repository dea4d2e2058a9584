import { isIP } from 'node:net';
import { buildConnector } from 'undici';
import { AppError, ERROR_CODES } from '../shared/errors.js';
import { assertConnectable, blockedReason, guardedLookup, type AddressPolicy } from './address-policy.js';

/**
 * An undici connector that applies the address policy where it cannot be dodged: names resolve
 * through the guarded lookup, IP literals are checked before connecting, and the socket's peer
 * once more after (a name that resolved to a public address cannot land on a private one). Without
 * a policy (the operator's own Telegram API URL) it is undici's plain connector.
 */
export function guardedConnector(policy: AddressPolicy | undefined, tls: { ca?: string } = {}): buildConnector.connector {
  const base = buildConnector({ ...(policy ? { lookup: guardedLookup(policy) } : {}), ...(tls.ca ? { ca: tls.ca } : {}) } as buildConnector.BuildOptions);
  return (options, callback) => {
    const host = options.hostname.replace(/^\[|\]$/g, '');
    try {
      if (policy && isIP(host)) assertConnectable(host, policy);
    } catch (e: unknown) {
      callback(e as Error, null);
      return;
    }
    base(options, (error, socket) => {
      const remote = socket?.remoteAddress;
      if (!error && policy && !policy.allowPrivate && remote && blockedReason(remote) !== undefined) {
        socket!.destroy();
        callback(new AppError(ERROR_CODES.blockedAddress, `connected to a non-public address (${blockedReason(remote)})`), null);
        return;
      }
      if (error) callback(error, null);
      else callback(null, socket!);
    });
  };
}

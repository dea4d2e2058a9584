import { createHash, createHmac } from 'node:crypto';

/** Node's hashes in the shape @smithy/signature-v4 wants: HMAC when given a secret. */
export class NodeSha256 {
  private readonly hash;
  constructor(secret?: string | ArrayBuffer | ArrayBufferView) {
    const key = typeof secret === 'string' || secret === undefined ? secret : Buffer.from(secret as ArrayBuffer);
    this.hash = key === undefined ? createHash('sha256') : createHmac('sha256', key);
  }
  update(data: Uint8Array): void {
    this.hash.update(data);
  }
  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.hash.digest());
  }
  reset(): void {}
}

// s3rver 3.7 ships no types; this declares only what embedded-s3-server.ts uses.
declare module 's3rver' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  interface S3rverOptions {
    directory: string;
    silent?: boolean;
    configureBuckets?: { name: string }[];
    /** Off by default; matters only for V2 signatures, the only kind s3rver verifies. */
    allowMismatchedSignatures?: boolean;
    vhostBuckets?: boolean;
  }

  class S3rver {
    constructor(options: S3rverOptions);
    /** Creates the buckets named in `configureBuckets` straight in the store, without HTTP. */
    configureBuckets(): Promise<void>;
    /** Koa's request handler, for mounting behind our own server. */
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
  }

  export = S3rver;
}

// s3rver resolves header-signed requests to an account by access key id and knows only S3RVER.
declare module 's3rver/lib/models/account.js' {
  interface AwsAccount {
    createKeyPair(accessKeyId: string, secretAccessKey: string): void;
  }
  const accounts: { DUMMY_ACCOUNT: AwsAccount };
  export = accounts;
}

/** The part of s3rver 3.7 the tests use (the package ships no types). */
declare module "s3rver" {
  import type { Server } from "node:http";
  import type { AddressInfo } from "node:net";

  interface S3rverOptions {
    address?: string;
    port?: number;
    silent?: boolean;
    directory?: string;
    configureBuckets?: Array<{ name: string }>;
  }

  export default class S3rver {
    constructor(options: S3rverOptions);
    /** Resolves with the bound address (port 0 gets a free port). */
    run(): Promise<AddressInfo>;
    close(): Promise<void>;
    readonly httpServer: Server;
  }
}

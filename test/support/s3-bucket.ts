import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { S3Client } from "@aws-sdk/client-s3";
import S3rver from "s3rver";
import {
  createS3ObjectReader,
  type S3ObjectReader,
} from "../../functions/adapters/config/s3-object.ts";

/** A bucket in s3rver on 127.0.0.1 (a free port, a scratch directory) and a client for it. */
export interface S3Bucket {
  readonly endpoint: string;
  readonly client: S3Client;
  close(): Promise<void>;
}

/** s3rver accepts its own fixed credentials; a Lambda's client reads them from the environment. */
export const S3RVER_CREDENTIALS = { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" } as const;

/** The gateway's reader of one object in an s3rver bucket, signing with s3rver's credentials. */
export function s3rverObjectReader(endpoint: string, bucket: string, key: string): S3ObjectReader {
  return createS3ObjectReader(
    { bucket, key, region: "us-east-1", endpoint },
    async () => S3RVER_CREDENTIALS,
  );
}

export async function startS3Bucket(bucket: string): Promise<S3Bucket> {
  const directory = await mkdtemp(join(tmpdir(), "s3rver-"));
  const server = new S3rver({
    port: 0,
    address: "127.0.0.1",
    silent: true,
    directory,
    configureBuckets: [{ name: bucket }],
  });
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  const client = new S3Client({
    endpoint,
    region: "us-east-1",
    forcePathStyle: true,
    credentials: S3RVER_CREDENTIALS,
  });
  return {
    endpoint,
    client,
    async close() {
      client.destroy();
      await server.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}

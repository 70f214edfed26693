// Drive the Delegated Routing V1 HTTP API of `bundlekit serve` with the reference client
// (npm @helia/delegated-routing-v1-http-api-client 9.0.2, getIPNS/putIPNS) and check what it reads
// with the npm `ipns` package (10.1.6, ipnsValidator); print what happened as one JSON object.
// Used by test_routing_reference_client.py; nothing of node_modules is committed.
// Usage: node routing_client.mjs URL SEED_A_HEX SEED_B_HEX VALUE
//   SEED_A: the key of the name bundlekit published; SEED_B: another key (foreign records, a name with none);
//   VALUE: the /ipfs/ path the client's own record points at.
import { delegatedRoutingV1HttpApiClient } from "@helia/delegated-routing-v1-http-api-client";
import { generateKeyPairFromSeed } from "@libp2p/crypto/keys";
import { peerIdFromPrivateKey } from "@libp2p/peer-id";
import { createIPNSRecord, marshalIPNSRecord, multihashToIPNSRoutingKey, unmarshalIPNSRecord } from "ipns";
import { ipnsValidator } from "ipns/validator";
import { base36 } from "multiformats/bases/base36";

const [url, seedA, seedB, value] = process.argv.slice(2);
const hex = (bytes) => Buffer.from(bytes).toString("hex");
const silent = Object.assign(() => {}, { error: () => {}, trace: () => {}, enabled: false });
const client = delegatedRoutingV1HttpApiClient({ url, cacheTTL: 0 })({ logger: { forComponent: () => silent } });
await client.start();

const keyA = await generateKeyPairFromSeed("Ed25519", Buffer.from(seedA, "hex"));
const keyB = await generateKeyPairFromSeed("Ed25519", Buffer.from(seedB, "hex"));
const nameA = peerIdFromPrivateKey(keyA);
const nameB = peerIdFromPrivateKey(keyB);
const day = 24 * 3600 * 1000;

async function outcome(action) {
  try {
    return { ok: true, result: (await action()) ?? null };
  } catch (error) {
    return { ok: false, error: error.name, message: String(error.message).slice(0, 300) };
  }
}

async function read(peer) {
  const bytes = await client.getIPNS(peer.toCID());
  await ipnsValidator(multihashToIPNSRoutingKey(peer.toMultihash()), bytes); // throws unless valid for the name
  const record = unmarshalIPNSRecord(bytes);
  return { hex: hex(bytes), sequence: Number(record.sequence), value: record.value };
}

const out = { nameA: nameA.toCID().toString(base36), pathName: nameA.toCID().toString() };
out.published = await outcome(() => read(nameA));
const seen = out.published.ok ? out.published.result.sequence : 0;
const theirs = marshalIPNSRecord(await createIPNSRecord(keyA, value, seen + 1, day));
out.put = await outcome(() => client.putIPNS(nameA.toCID(), theirs));
out.putHex = hex(theirs);
out.putAgain = await outcome(() => client.putIPNS(nameA.toCID(), theirs));
out.readBack = await outcome(() => read(nameA));
const equal = marshalIPNSRecord(await createIPNSRecord(keyA, value, seen + 1, 2 * day));
out.equalSequence = await outcome(() => client.putIPNS(nameA.toCID(), equal));
const lower = marshalIPNSRecord(await createIPNSRecord(keyA, value, seen, 2 * day));
out.lowerSequence = await outcome(() => client.putIPNS(nameA.toCID(), lower));
const foreign = marshalIPNSRecord(await createIPNSRecord(keyB, value, seen + 5, day));
out.foreign = await outcome(() => client.putIPNS(nameA.toCID(), foreign));
out.none = await outcome(() => read(nameB));
out.afterRefusals = await outcome(() => read(nameA));
await client.stop();
console.log(JSON.stringify(out));

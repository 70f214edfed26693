// Differential oracle: run the reference UnixFS tools over trees on disk and
// print, per job, the root CID and every per-path CID they compute.
//
// Run from a folder whose node_modules holds ipfs-car@3.1.0 and
// ipfs-unixfs-importer@17.1.1 (the Python side links one in); never commit them.
//
//   node reference.mjs JOBS.json > OUT.json
//
// JOBS.json: {"jobs": [job, ...]}; each job has "id", "tool", "dir", "hidden":
//   tool "importer": ipfs-unixfs-importer 17 with "options":
//       {profile?, cidVersion?, rawLeaves?, chunkSize?, maxLinks?, shardSplitThresholdBytes?}
//       (chunkSize/maxLinks become the fixedSize chunker and balanced layout).
//       The tree is walked the way `ipfs add -r` does: dot-files skipped unless
//       hidden, empty directories kept; the root is DIR itself. With
//       "blocks": true it also reports the sorted distinct block CIDs written.
//   tool "ipfs-car": ipfs-car 3.1.0's own library path (files-from-path +
//       ipfs-car/unixfs.js createDirectoryEncoderStream), exactly what
//       `ipfs-car pack DIR` runs, in-process; optional "chunkSize"/"width"
//       replace its 1 MiB / 1024 settings (to reach deep layouts cheaply).
//   tool "ipfs-car-cli": the real `ipfs-car pack DIR --output CAR` command
//       line (job "car" = output path, "bin" = bin.js); also reports "blocks",
//       the sorted distinct block CIDs in the CAR.
// Output: {id: {root, entries: {path: cid}, blocks?}}; "" is the root path.

import fs from 'node:fs'
import path from 'node:path'
import { execFileSync } from 'node:child_process'
import { createRequire } from 'node:module'
import { importer } from 'ipfs-unixfs-importer'
import { fixedSize } from 'ipfs-unixfs-importer/chunker'
import { balanced } from 'ipfs-unixfs-importer/layout'
import * as dagPb from '@ipld/dag-pb'
import { UnixFS } from 'ipfs-unixfs'
import { CarReader } from '@ipld/car'
import { filesFromPaths } from 'files-from-path'
import * as IpldUnixFS from '@ipld/unixfs'
import { withMaxChunkSize } from '@ipld/unixfs/file/chunker/fixed'
import { withWidth } from '@ipld/unixfs/file/layout/balanced'
import * as raw from 'multiformats/codecs/raw'

const require = createRequire(import.meta.url)
const carDir = path.dirname(require.resolve('ipfs-car/package.json'))
const carUnixfs = await import(path.join(carDir, 'unixfs.js'))

class Blocks {
  map = new Map()
  async put (cid, bytes) { this.map.set(cid.toString(), bytes); return cid }
  async get (cid) {
    const bytes = this.map.get(cid.toString())
    if (bytes == null) throw new Error(`missing block ${cid}`)
    return bytes
  }
}

function * walk (root, hidden, rel = '') {
  const entries = fs.readdirSync(path.join(root, rel), { withFileTypes: true })
    .filter(e => hidden || !e.name.startsWith('.'))
    .sort((a, b) => Buffer.compare(Buffer.from(a.name), Buffer.from(b.name)))
  if (entries.length === 0 && rel !== '') yield { path: rel }
  for (const e of entries) {
    const p = rel === '' ? e.name : `${rel}/${e.name}`
    if (e.isDirectory()) {
      yield * walk(root, hidden, p)
    } else {
      yield { path: p, content: fs.createReadStream(path.join(root, p)) }
    }
  }
}

async function listAll (rootCid, blockstore) {
  const out = {}
  async function visit (cid, rel) {
    out[rel] = cid.toString()
    if (cid.code !== dagPb.code) return
    const node = dagPb.decode(await blockstore.get(cid))
    const fsNode = UnixFS.unmarshal(node.Data)
    if (fsNode.type === 'directory') {
      for (const link of node.Links) await visit(link.Hash, rel === '' ? link.Name : `${rel}/${link.Name}`)
    } else if (fsNode.type === 'hamt-sharded-directory') {
      await visitShard(node, rel)
    }
  }
  async function visitShard (node, rel) {
    for (const link of node.Links) {
      if (link.Name.length === 2) {
        await visitShard(dagPb.decode(await blockstore.get(link.Hash)), rel)
      } else {
        const name = link.Name.slice(2)
        await visit(link.Hash, rel === '' ? name : `${rel}/${name}`)
      }
    }
  }
  await visit(rootCid, '')
  return out
}

async function runImporter (job) {
  const o = job.options ?? {}
  const options = {}
  for (const k of ['profile', 'cidVersion', 'rawLeaves', 'shardSplitThresholdBytes']) {
    if (o[k] != null) options[k] = o[k]
  }
  if (o.chunkSize != null) options.chunker = fixedSize({ chunkSize: o.chunkSize })
  if (o.maxLinks != null) options.layout = balanced({ maxChildrenPerNode: o.maxLinks })
  const blockstore = new Blocks()
  // Prefix a wrapper name so the importer roots the result at DIR itself.
  const source = [...walk(job.dir, job.hidden)].map(e => ({ ...e, path: `root/${e.path}` }))
  let root
  for await (const entry of importer(source, blockstore, options)) root = entry
  const out = { root: root.cid.toString(), entries: await listAll(root.cid, blockstore) }
  if (job.blocks) out.blocks = [...blockstore.map.keys()].sort()
  return out
}

async function runIpfsCarLib (job) {
  const files = await filesFromPaths([job.dir], { hidden: job.hidden })
  let settings
  if (job.chunkSize != null || job.width != null) {
    settings = IpldUnixFS.configure({
      fileChunkEncoder: raw,
      smallFileEncoder: raw,
      chunker: withMaxChunkSize(job.chunkSize ?? 1024 * 1024),
      fileLayout: withWidth(job.width ?? 1024)
    })
  }
  const stream = carUnixfs.createDirectoryEncoderStream(files, settings)
  const blockstore = new Blocks()
  let last
  const reader = stream.getReader()
  while (true) {
    const { done, value } = await reader.read()
    if (done) break
    await blockstore.put(value.cid, value.bytes)
    last = value
  }
  return { root: last.cid.toString(), entries: await listAll(last.cid, blockstore) }
}

async function runIpfsCarCli (job) {
  const root = execFileSync(process.execPath, [
    path.join(carDir, 'bin.js'), 'pack', job.dir, '--output', job.car, ...(job.hidden ? ['--hidden'] : [])
  ]).toString().trim()
  const reader = await CarReader.fromBytes(fs.readFileSync(job.car))
  const blockstore = new Blocks()
  for await (const { cid, bytes } of reader.blocks()) await blockstore.put(cid, bytes)
  const entries = await listAll((await reader.getRoots())[0], blockstore)
  return { root, entries, blocks: [...blockstore.map.keys()].sort() }
}

const RUNNERS = { importer: runImporter, 'ipfs-car': runIpfsCarLib, 'ipfs-car-cli': runIpfsCarCli }
const { jobs } = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'))
const result = {}
for (const job of jobs) {
  const started = Date.now()
  result[job.id] = await RUNNERS[job.tool](job)
  if (process.env.REFERENCE_TIMING) process.stderr.write(`${Date.now() - started} ms ${job.id}\n`)
}
process.stdout.write(JSON.stringify(result) + '\n')

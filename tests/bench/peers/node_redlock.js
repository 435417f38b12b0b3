#!/usr/bin/env node
// SPDX-License-Identifier: MIT
// node-redlock (redlock 5.0.0-beta.2) with ioredis as a peer benchmark for edgelock
// (issue 7). Versions are pinned in package.json / package-lock.json; run-all.sh
// installs them with `npm ci` into tests/bench/peers/node_modules.
//
//   node node_redlock.js cycles  --ports P [--cycles N]          acquire+release, 1 node
//   node node_redlock.js acquire --ports P1,...,P5 [--cycles N]  Redlock acquire latency
//                                                                 (release not timed)
//   node node_redlock.js handoff --ports P [--rounds N] [--retry-delay MS]
//        holder releases; a waiter retrying every MS (retryJitter 0) takes the lock
//
// Prints one JSON object on stdout.
'use strict';
const Redis = require('ioredis');
const RedlockModule = require('redlock');
const Redlock = RedlockModule.default || RedlockModule;

function args() {
  const a = { cmd: process.argv[2], ports: [], cycles: 3000, warmup: 200, rounds: 20, retryDelay: 100 };
  for (let i = 3; i < process.argv.length; i += 2) {
    const k = process.argv[i], v = process.argv[i + 1];
    if (k === '--ports') a.ports = v.split(',').map(Number);
    else if (k === '--cycles') a.cycles = Number(v);
    else if (k === '--warmup') a.warmup = Number(v);
    else if (k === '--rounds') a.rounds = Number(v);
    else if (k === '--retry-delay') a.retryDelay = Number(v);
    else { console.error('node_redlock: unknown option ' + k); process.exit(2); }
  }
  if (!a.ports.length) { console.error('node_redlock: --ports is required'); process.exit(2); }
  return a;
}

function pct(sorted, p) {
  if (!sorted.length) return null;
  const k = Math.min(sorted.length - 1, Math.max(0, Math.round(p / 100 * sorted.length + 0.5) - 1));
  return sorted[k];
}

function clients(ports) {
  return ports.map((p) => new Redis({ host: '127.0.0.1', port: p, lazyConnect: false, enableOfflineQueue: true,
    maxRetriesPerRequest: 1 }));
}

const nowUs = () => Number(process.hrtime.bigint()) / 1000;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function timedLoop(a, body) {
  for (let i = 0; i < a.warmup; i++) await body(i, false);
  const lat = [];
  const t0 = nowUs();
  for (let i = 0; i < a.cycles; i++) lat.push(await body(i, true));
  const total = (nowUs() - t0) / 1e6;
  lat.sort((x, y) => x - y);
  return { lat, total };
}

async function cmdCycles(a, mode) {
  const cs = clients(a.ports);
  await Promise.all(cs.map((c) => c.ping()));
  const rl = new Redlock(cs, { retryCount: 0, driftFactor: 0.01 });
  const res = `elk-bench:{redlock-${process.pid}}`;
  const { lat, total } = await timedLoop(a, async () => {
    const t = nowUs();
    const lock = await rl.acquire([res], 10000);
    const acquired = nowUs();
    await lock.release();
    return mode === 'acquire' ? acquired - t : nowUs() - t;
  });
  cs.forEach((c) => c.disconnect());
  return {
    peer: 'node-redlock', redlock: '5.0.0-beta.2', mode, nodes: a.ports.length, cycles: a.cycles,
    cycles_per_s: a.cycles / total, p50_us: pct(lat, 50), p99_us: pct(lat, 99),
    mean_us: lat.reduce((x, y) => x + y, 0) / lat.length,
  };
}

async function cmdHandoff(a) {
  const hc = clients(a.ports), wc = clients(a.ports);
  await Promise.all(hc.concat(wc).map((c) => c.ping()));
  const holder = new Redlock(hc, { retryCount: 0 });
  const waiter = new Redlock(wc, { retryCount: 100000, retryDelay: a.retryDelay, retryJitter: 0 });
  const samples = [];
  for (let i = 0; i < a.rounds; i++) {
    const res = `elk-bench:{redlock-handoff-${process.pid}-${i}}`;
    const held = await holder.acquire([res], 30000);
    let tGot = 0;
    const w = waiter.acquire([res], 30000).then(async (l) => { tGot = nowUs(); await l.release(); });
    // Release at a point unrelated to the waiter's retry phase.
    await sleep(a.retryDelay * 1.5 + (i % 7) * a.retryDelay / 7);
    const tRel = nowUs();
    await held.release();
    await w;
    samples.push(tGot - tRel);
  }
  hc.concat(wc).forEach((c) => c.disconnect());
  samples.sort((x, y) => x - y);
  return {
    peer: 'node-redlock', mode: 'handoff', rounds: a.rounds, retry_delay_ms: a.retryDelay,
    p50_us: pct(samples, 50), p99_us: pct(samples, 99),
    mean_us: samples.reduce((x, y) => x + y, 0) / samples.length,
  };
}

(async () => {
  const a = args();
  let out;
  if (a.cmd === 'cycles' || a.cmd === 'acquire') out = await cmdCycles(a, a.cmd);
  else if (a.cmd === 'handoff') out = await cmdHandoff(a);
  else { console.error('node_redlock: command must be cycles, acquire or handoff'); process.exit(2); }
  console.log(JSON.stringify(out));
  process.exit(0);
})().catch((e) => { console.error('node_redlock: ' + (e && e.stack || e)); process.exit(1); });

// Workspace A's load in a process of its own (started by bench/noisy-neighbour.ts through fork): its
// bodies are built, its 1 MiB requests written and its answers read on another event loop than
// B's, so the time B's requests wait is the server's, not the load generator's.
//
// Messages: the parent sends { type: 'prepare', key, runId }, then { type: 'go', url }, later
// { type: 'stop' }. This process answers { type: 'ready' } once its requests are built (the 1 MiB
// body among them) and { type: 'result', figures } once its requests in flight are answered, then
// exits. It also exits when its parent goes away.
import { aRequests, runA, type ARequests } from './noisy-client.js';

type Message = { type: 'prepare'; key: string; runId: string } | { type: 'go'; url: string } | { type: 'stop' };

if (!process.send) throw new Error('bench/noisy-a.ts runs as a child of bench/noisy-neighbour.ts');
const reply = (message: unknown) =>
  new Promise<void>((resolve, reject) =>
    process.send!(message, (err: Error | null) => (err ? reject(err) : resolve())),
  );
const fail = (err: unknown) => {
  process.stderr.write(`noisy-a: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
};

let requests: ARequests | null = null;
let stopping = false;
process.on('disconnect', () => process.exit(0));
process.on('message', (m: Message) => {
  switch (m.type) {
    case 'prepare':
      requests = aRequests(m.key, m.runId);
      reply({ type: 'ready' }).catch(fail);
      return;
    case 'go':
      if (!requests) return fail(new Error('go before prepare'));
      runA(m.url, requests, () => stopping)
        .then((figures) => reply({ type: 'result', figures }))
        .then(() => process.disconnect())
        .catch(fail);
      return;
    case 'stop':
      stopping = true;
      return;
  }
});

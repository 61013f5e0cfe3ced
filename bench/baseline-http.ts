// Baseline: node:http answering every request with bytes prepared once, the body of a real
// GET /v1/contacts?limit=50 response. What is left is the cost of HTTP itself on this machine:
// the ceiling no framework or database work can beat. Started by run.ts as a process of its own.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';

const bodyFile = process.env.BODY_FILE;
const port = Number(process.env.PORT);
if (!bodyFile || !port) throw new Error('BODY_FILE and PORT are required');

const body = readFileSync(bodyFile);
const headers = { 'content-type': 'application/json; charset=utf-8', 'content-length': body.length };

const server = createServer((_request, response) => {
  response.writeHead(200, headers);
  response.end(body);
});
// Same keep-alive as the service (Fastify's 72 s), so the load generator's connections stay open.
server.keepAliveTimeout = 72_000;

const stop = () => server.close(() => process.exit(0));
process.once('SIGTERM', stop);
process.once('SIGINT', stop);

server.listen(port, '127.0.0.1');

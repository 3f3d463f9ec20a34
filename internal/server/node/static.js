// storebench's static server for Node.js: serves one page from memory,
// read once at start, the way a small Node.js site serves a file.
// Usage: node static.js PORT PAGEFILE
'use strict';
const http = require('http');
const fs = require('fs');

const port = Number(process.argv[2]);
const page = fs.readFileSync(process.argv[3]);
const server = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/page.html') {
    res.writeHead(200, { 'Content-Type': 'text/html', 'Content-Length': page.length });
    res.end(page);
    return;
  }
  res.writeHead(404, { 'Content-Type': 'text/plain', 'Content-Length': 10 });
  res.end('not found\n');
});
server.keepAliveTimeout = 5000;
// The same words as the other servers for a port in use, so start-up
// errors read alike.
server.on('error', (e) => {
  console.error('listen 127.0.0.1:' + port + ': ' + (e.code === 'EADDRINUSE' ? 'Address already in use' : e.message));
  process.exit(1);
});
server.listen(port, '127.0.0.1', () => console.log('listening on 127.0.0.1:' + port));
process.on('SIGTERM', () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
});

// tests/support/h2_server.js ROOT CERT KEY READY_FILE: static files under
// ROOT over TLS with HTTP/2 (Node's built-in http2; ALPN offers h2 and
// http/1.1, so a client that falls back is seen), single byte ranges and
// ETags. GET /__log answers the requests so far, each with the HTTP
// version it came in. Port in READY_FILE ({"port": P}); stops when stdin
// closes (the parent's pipe), or after 300 s.
"use strict";
const fs = require("fs");
const http2 = require("http2");
const path = require("path");

const [root, cert, key, readyFile] = process.argv.slice(2);
const base = path.resolve(root);
const log = [];

function serve(req, res) {
  const url = req.url.split("?")[0];
  if (url === "/__log") {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify(log));
    return;
  }
  log.push({ method: req.method, path: url, version: req.httpVersion, range: req.headers.range || null });
  const file = path.resolve(base, "." + decodeURIComponent(url));
  if (!file.startsWith(base + path.sep)) {
    res.writeHead(403);
    res.end();
    return;
  }
  fs.stat(file, (err, st) => {
    if (err || !st.isFile()) {
      res.writeHead(404, { "content-type": "text/plain" });
      res.end("not found");
      return;
    }
    let start = 0;
    let end = st.size - 1;
    let status = 200;
    const m = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range || "");
    if (m) {
      start = Number(m[1]);
      end = m[2] ? Math.min(Number(m[2]), st.size - 1) : st.size - 1;
      if (start > end) {
        res.writeHead(416, { "content-range": `bytes */${st.size}` });
        res.end();
        return;
      }
      status = 206;
    }
    const headers = { "content-length": end - start + 1, etag: `"${st.size}-${st.mtimeMs}"`, "accept-ranges": "bytes" };
    if (status === 206) headers["content-range"] = `bytes ${start}-${end}/${st.size}`;
    res.writeHead(status, headers);
    if (req.method === "HEAD" || end < start) {
      res.end();
      return;
    }
    fs.createReadStream(file, { start, end }).pipe(res);
  });
}

const server = http2.createSecureServer(
  { cert: fs.readFileSync(cert), key: fs.readFileSync(key), allowHTTP1: true }, serve);
server.listen(0, "127.0.0.1", () => {
  fs.writeFileSync(readyFile + ".tmp", JSON.stringify({ port: server.address().port }));
  fs.renameSync(readyFile + ".tmp", readyFile);
});
process.stdin.on("end", () => process.exit(0));
process.stdin.resume();
setTimeout(() => process.exit(0), 300 * 1000).unref();

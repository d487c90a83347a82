'use strict';
// The grid benchmark's baseline: a bare node:http server of a static page with one <img> per file of a directory
// (thumbnails copied from the service), each served from memory with the service's immutable caching. What a browser
// needs to show N thumbnails on this machine with no application in between. Prints `ready <port>`.
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');

const dir = process.argv[2];
const files = fs.readdirSync(dir).sort();
const bytes = new Map(files.map((f) => [f, fs.readFileSync(path.join(dir, f))]));
const page = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>baseline</title>
<style>ul{display:grid;grid-template-columns:repeat(auto-fill,minmax(170px,1fr));gap:14px;list-style:none;padding:16px}
img{width:100%;aspect-ratio:1;object-fit:cover;display:block}</style></head>
<body><ul>${files.map((f) => `<li><img class="thumb" alt="" src="/t/${f}"></li>`).join('')}</ul></body></html>`;

// The same page for an application that must first ask which images to show: an inline script fetches a JSON list
// of the 100 (about 1 KB per item, as the asset browser's first-screen answer is) and then adds the <img> elements.
// What one mandatory round trip before the first image costs on this machine, with nothing else of an application.
const list = JSON.stringify({
  items: files.map((f, i) => ({ id: i, url: `/t/${f}`, name: `render_${f}`, about: 'x'.repeat(900) })),
});
const listedPage = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>listed</title>
<style>ul{display:grid;grid-template-columns:repeat(auto-fill,minmax(170px,1fr));gap:14px;list-style:none;padding:16px}
img{width:100%;aspect-ratio:1;object-fit:cover;display:block}</style>
<script>fetch('/list.json').then((r) => r.json()).then(({ items }) => {
  const ul = document.getElementById('grid');
  ul.append(...items.map((it) => { const li = document.createElement('li'); const img = new Image(); img.className = 'thumb';
    img.alt = ''; img.src = it.url; li.append(img); return li; }));
});</script></head><body><ul id="grid"></ul></body></html>`;

http
  .createServer((req, res) => {
    if (req.url.startsWith('/listed')) {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-cache' }).end(listedPage);
      return;
    }
    if (req.url.startsWith('/list.json')) {
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(list);
      return;
    }
    if (req.url.startsWith('/page')) {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-cache' }).end(page);
      return;
    }
    const data = bytes.get(req.url.slice(3));
    if (!req.url.startsWith('/t/') || !data) {
      res.writeHead(404).end();
      return;
    }
    res
      .writeHead(200, {
        'content-type': 'image/webp',
        'content-length': data.length,
        'cache-control': 'private, max-age=31536000, immutable',
      })
      .end(data);
  })
  .listen(0, '127.0.0.1', function () {
    process.stdout.write(`ready ${this.address().port}\n`);
  });

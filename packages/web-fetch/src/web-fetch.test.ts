import type { LookupAddress } from "node:dns";
import { createServer, type Server } from "node:http";
import { silentLogger } from "@almanac/core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createAddressPolicy } from "./address-policy.js";
import { htmlToMarkdown } from "./html-to-markdown.js";
import { createWebFetchTool } from "./web-fetch.js";

let server: Server;
let port: number;
const hits: string[] = [];

const ARTICLE = `<!doctype html><html><head><title>Tide tables</title><script>alert(1)</script></head>
<body><nav>Home | About</nav><article><h1>Tide tables</h1>
<p>High tide at the harbour is at 06:42 and again at 19:03. ${"The moon pulls the water. ".repeat(20)}</p>
<ul><li>Spring tides</li><li>Neap tides</li></ul></article><footer>© 2026</footer></body></html>`;

beforeEach(async () => {
  hits.length = 0;
  server = createServer((request, response) => {
    hits.push(request.url ?? "");
    if (request.url === "/page") {
      response.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(ARTICLE);
    } else if (request.url === "/to-private") {
      response.writeHead(302, { location: "http://10.1.2.3/secret" }).end();
    } else if (request.url === "/to-metadata") {
      response.writeHead(301, { location: "http://169.254.169.254/latest/meta-data/" }).end();
    } else if (request.url === "/hop") {
      response.writeHead(302, { location: "/page" }).end();
    } else if (request.url === "/binary") {
      response.writeHead(200, { "content-type": "application/octet-stream" }).end(Buffer.alloc(10));
    } else if (request.url === "/big") {
      response.writeHead(200, { "content-type": "text/plain" }).end("x".repeat(200_000));
    } else {
      response.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  port = typeof address === "object" && address !== null ? address.port : 0;
});
afterEach(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

/** A resolver where `public.test` is this test's server (as if it were public) and `evil.test` is loopback. */
function fakeLookup(
  hostname: string,
  _options: unknown,
  callback: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
): void {
  const table: Record<string, LookupAddress[]> = {
    "public.test": [{ address: "127.0.0.1", family: 4 }],
    "evil.test": [{ address: "127.0.0.1", family: 4 }],
    "mixed.test": [
      { address: "93.184.216.34", family: 4 },
      { address: "10.0.0.5", family: 4 },
    ],
  };
  const found = table[hostname];
  if (found === undefined) callback(Object.assign(new Error("not found"), { code: "ENOTFOUND" }), []);
  else callback(null, found);
}

async function fetchWith(url: string, allow: readonly string[] = []) {
  const tool = createWebFetchTool({ allow, lookup: fakeLookup as never, timeoutMs: 5_000 });
  return tool.execute({ url }, { signal: AbortSignal.timeout(10_000), callId: "c1", logger: silentLogger });
}

const text = (output: Awaited<ReturnType<typeof fetchWith>>) =>
  typeof output === "string" ? output : output.content;

describe("web_fetch's guard against requests to private addresses (SSRF)", () => {
  it.each([
    ["127.0.0.1", "http://127.0.0.1:PORT/page", /loopback/],
    ["[::1]", "http://[::1]:PORT/page", /loopback/],
    ["cloud metadata", "http://169.254.169.254/latest/meta-data/", /link-local/],
    ["10/8", "http://10.0.0.1/admin", /private network/],
    ["an IPv4-mapped IPv6 loopback", "http://[::ffff:127.0.0.1]:PORT/page", /loopback/],
    [
      "a name that resolves to loopback",
      "http://evil.test:PORT/page",
      /evil\.test resolves to 127\.0\.0\.1 is a loopback/,
    ],
    ["a name with one private address among public ones", "http://mixed.test/", /private network/],
  ])("refuses %s", async (_name, url, reason) => {
    const output = await fetchWith(url.replace("PORT", String(port)));
    expect(output).toMatchObject({ isError: true });
    expect(text(output)).toMatch(reason);
    expect(hits).toEqual([]);
  });

  it("refuses a redirect to a private or metadata address, checking every hop", async () => {
    // The first hop is allowed (this test's server stands in for a public site); where it redirects is not.
    for (const path of ["/to-private", "/to-metadata"]) {
      const output = await fetchWith(`http://public.test:${port}${path}`, ["127.0.0.1"]);
      expect(output).toMatchObject({ isError: true });
      expect(text(output)).toMatch(/private network|link-local/);
    }
    expect(hits).toEqual(["/to-private", "/to-metadata"]);
  });

  it("refuses other schemes and URLs with credentials", async () => {
    expect(text(await fetchWith("file:///etc/passwd"))).toContain("only http and https");
    expect(text(await fetchWith(`http://user:pw@public.test:${port}/page`, ["127.0.0.1"]))).toContain(
      "credentials",
    );
  });
});

describe("web_fetch on an allowed page", () => {
  it("returns the readable part as Markdown with the title and final URL, following a same-site redirect", async () => {
    const output = await fetchWith(`http://public.test:${port}/hop`, ["127.0.0.1"]);
    const body = text(output);
    expect(body).toContain("# Tide tables");
    expect(body).toContain(`Source: http://public.test:${port}/page`);
    expect(body).toContain("High tide at the harbour is at 06:42");
    expect(body).toMatch(/-\s+Spring tides/);
    expect(body).not.toContain("alert(1)");
    expect(body).not.toContain("Home | About");
  });

  it("says when a page is not text, and cuts a page larger than the limit", async () => {
    expect(text(await fetchWith(`http://public.test:${port}/binary`, ["127.0.0.1"]))).toContain(
      "not a text page",
    );
    const tool = createWebFetchTool({
      allow: ["127.0.0.1"],
      lookup: fakeLookup as never,
      maxBytes: 10_000,
      maxChars: 5_000,
    });
    const big = text(
      await tool.execute(
        { url: `http://public.test:${port}/big` },
        { signal: AbortSignal.timeout(5_000), callId: "c", logger: silentLogger },
      ),
    );
    expect(big).toContain("larger than the download limit");
    expect(big).toContain("[… cut at 5000 characters]");
  });
});

describe("the address policy", () => {
  it("allows public unicast and listed ranges only", () => {
    const policy = createAddressPolicy(["192.168.1.0/24"]);
    expect(policy.refusal("93.184.216.34")).toBeNull();
    expect(policy.refusal("2606:2800:220:1:248:1893:25c8:1946")).toBeNull();
    expect(policy.refusal("192.168.1.20")).toBeNull();
    expect(policy.refusal("192.168.2.20")).toMatch(/private/);
    expect(policy.refusal("100.100.100.200")).toMatch(/carrier-grade/);
    expect(policy.refusal("fd00:ec2::254")).toMatch(/private/);
    expect(policy.refusal("0.0.0.0")).not.toBeNull();
  });

  it("turns a page without an article into Markdown of its body", () => {
    expect(htmlToMarkdown("<html><body><p>Just <b>one</b> line.</p></body></html>").markdown).toBe(
      "Just **one** line.",
    );
  });
});

// web_fetch: a public web page as Markdown, refusing private and loopback addresses after DNS and on every redirect.
export { type AddressPolicy, createAddressPolicy } from "./address-policy.js";
export {
  createWebFetchTool,
  fetchReadable,
  type WebFetchOptions,
  WebFetchRefusal,
} from "./web-fetch.js";

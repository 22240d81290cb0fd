// register.mjs — loads hooks.mjs so @modelcontextprotocol/conformance (which
// imports fs.globSync, Node >= 22) runs on Node 20.
import { register } from 'node:module';
register('./hooks.mjs', import.meta.url);

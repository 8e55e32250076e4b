/**
 * A native addon built for another Node, as better-sqlite3's is after a Node upgrade without `npm
 * rebuild`: a shared object that registers itself with a NODE_MODULE_VERSION other than this Node's, so
 * that process.dlopen refuses it with Node's own "compiled against a different Node.js version" error.
 * Compiled here with the system's C compiler: nothing about the refusal is imitated.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The module version the stale addon claims (Node 18's); this Node's is process.versions.modules. */
export const STALE_MODULE_VERSION = 108;

/** Node's `struct node_module`, registered from a constructor as NODE_MODULE_CONTEXT_AWARE does it. */
const SOURCE = `
struct node_module {
  int nm_version;
  unsigned int nm_flags;
  void *nm_dso_handle;
  const char *nm_filename;
  void *nm_register_func;
  void *nm_context_register_func;
  const char *nm_modname;
  void *nm_priv;
  struct node_module *nm_link;
};
extern void node_module_register(void *module);
static void init(void) {}
static struct node_module module = { ${STALE_MODULE_VERSION}, 0, 0, "stale.c", (void *)init, 0, "stale", 0, 0 };
__attribute__((constructor)) static void register_module(void) { node_module_register(&module); }
`;

/** Compiles the stale addon into `dir`; answers its path. */
export function buildStaleAddon(dir: string): string {
  const source = join(dir, 'stale.c');
  const addon = join(dir, 'stale.node');
  writeFileSync(source, SOURCE);
  execFileSync('cc', ['-shared', '-fPIC', '-o', addon, source], { stdio: ['ignore', 'ignore', 'pipe'] });
  return addon;
}

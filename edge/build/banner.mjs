/**
 * The bundle's banner: runs before anything else in the executable and tells each module where its
 * `import.meta.url` points. In the executable, that is the data it carries (AP dialects, device bindings,
 * SQL migrations), unpacked once per build into `data-<digest>` under $CACHE_DIRECTORY, else
 * `<tmpdir>/lintel-edge-<uid>`; `.complete`, written last, marks a whole copy.
 *
 * A `data-<digest>` without `.complete` is stale: an unpack cut short, or one systemd-tmpfiles has partly
 * aged away (the empty marker, never read, goes first). It is removed and replaced; should that still
 * fail, this process uses its own fresh copy, so no command is kept from starting by what was left there.
 *
 * Kept apart from build.mjs (which builds on import) so that tests can run it.
 */
export const BANNER = `var __lintelFileUrl = (() => {
  const path = require("node:path");
  const url = require("node:url");
  let root;
  function settle(fs, tmp, dir) {
    const complete = () => fs.existsSync(path.join(dir, ".complete"));
    try {
      fs.renameSync(tmp, dir);
      return dir;
    } catch {}
    if (complete()) {
      fs.rmSync(tmp, { recursive: true, force: true });
      return dir;
    }
    try {
      fs.rmSync(dir, { recursive: true, force: true });
      fs.renameSync(tmp, dir);
      return dir;
    } catch {}
    if (complete()) {
      fs.rmSync(tmp, { recursive: true, force: true });
      return dir;
    }
    return tmp;
  }
  function extract(sea) {
    const fs = require("node:fs");
    const os = require("node:os");
    const manifest = JSON.parse(sea.getAsset("lintel-manifest.json", "utf8"));
    const base = (process.env.CACHE_DIRECTORY || "").split(":")[0] || path.join(os.tmpdir(), "lintel-edge-" + (process.getuid ? process.getuid() : "user"));
    fs.mkdirSync(base, { recursive: true, mode: 0o700 });
    const st = fs.lstatSync(base);
    if (!st.isDirectory() || (process.getuid && st.uid !== process.getuid()) || (st.mode & 0o022) !== 0) {
      throw new Error("refusing to unpack data into " + base + ": it must be a directory owned by this user and writable by no one else");
    }
    const dir = path.join(base, "data-" + manifest.digest.slice(0, 16));
    if (fs.existsSync(path.join(dir, ".complete"))) return dir;
    const tmp = dir + "." + process.pid + ".tmp";
    fs.rmSync(tmp, { recursive: true, force: true });
    for (const file of manifest.files) {
      const dest = path.join(tmp, file);
      fs.mkdirSync(path.dirname(dest), { recursive: true, mode: 0o700 });
      fs.writeFileSync(dest, Buffer.from(sea.getAsset(file)), { mode: 0o600 });
    }
    fs.writeFileSync(path.join(tmp, ".complete"), "");
    return settle(fs, tmp, dir);
  }
  return (file) => {
    if (!root) {
      const sea = require("node:sea");
      root = sea.isSea() ? extract(sea) : process.env.LINTEL_EDGE_ROOT || path.resolve(__dirname, "..", "..");
    }
    return url.pathToFileURL(path.join(root, file)).href;
  };
})();
`;

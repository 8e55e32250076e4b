/**
 * The bundle's banner: runs before anything else in the executable and tells each module where its
 * `import.meta.url` points. In the executable, that is the data it carries (AP dialects, device bindings,
 * SQL migrations), unpacked once per build into `data-<digest>` under $CACHE_DIRECTORY, else
 * `<tmpdir>/lintel-edge-<uid>`; `.complete`, written last, marks a whole copy.
 *
 * Each process unpacks into `data-<digest>.<pid>.tmp` and renames that into place. A `data-<digest>`
 * without `.complete` is stale: an unpack cut short, or one systemd-tmpfiles has partly aged away (the
 * empty marker, never read, goes first). It is moved aside in one rename, to `data-<digest>.stale.<pid>`,
 * and removed from there, never where it stood: two commands starting together over it each see it
 * stale, and a removal in place could take the whole copy the other has just renamed in (one moved
 * aside whole is put back). Should the stale copy stay put all the same, this process uses its own
 * fresh copy, so no command is kept from starting by what was left there. Each start removes the
 * copies such a process left (`.tmp` of a process that has ended; `.stale.` ones of an ended process or
 * older than a few minutes), so none stays behind for good.
 *
 * Kept apart from build.mjs (which builds on import) so that tests can run it.
 */
export const BANNER = `var __lintelFileUrl = (() => {
  const path = require("node:path");
  const url = require("node:url");
  const LEFTOVER_STALE_MS = 5 * 60 * 1000;
  let root;
  function alive(pid) {
    try {
      process.kill(pid, 0);
      return true;
    } catch (err) {
      return err.code === "EPERM";
    }
  }
  function removeLeftovers(fs, base) {
    let names = [];
    try {
      names = fs.readdirSync(base);
    } catch {}
    for (const name of names) {
      const tmp = /^data-[0-9a-f]+[.]([0-9]+)[.]tmp$/.exec(name);
      const stale = /^data-[0-9a-f]+[.]stale[.]([0-9]+)$/.exec(name);
      if (!tmp && !stale) continue;
      const pid = Number((tmp || stale)[1]);
      const where = path.join(base, name);
      let old = false;
      try {
        old = stale !== null && Date.now() - fs.lstatSync(where).ctimeMs > LEFTOVER_STALE_MS;
      } catch {}
      // A .tmp copy a process still runs may be the one it uses: only its end frees it.
      if (pid !== process.pid && alive(pid) && !old) continue;
      try {
        fs.rmSync(where, { recursive: true, force: true });
      } catch {}
    }
  }
  function settle(fs, tmp, dir) {
    const complete = (d) => fs.existsSync(path.join(d, ".complete"));
    const rename = (from, to) => {
      try {
        fs.renameSync(from, to);
        return true;
      } catch {
        return false;
      }
    };
    if (rename(tmp, dir)) return dir;
    const aside = dir + ".stale." + process.pid;
    if (!complete(dir) && rename(dir, aside) && complete(aside)) rename(aside, dir);
    let used = tmp;
    if (rename(tmp, dir)) used = dir;
    else if (complete(dir)) {
      fs.rmSync(tmp, { recursive: true, force: true });
      used = dir;
    }
    try {
      fs.rmSync(aside, { recursive: true, force: true });
    } catch {}
    return used;
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
    removeLeftovers(fs, base);
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

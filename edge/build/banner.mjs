/**
 * The bundle's banner: runs before anything else in the executable and tells each module where its
 * `import.meta.url` points. In the executable, that is the data it carries (AP dialects, device bindings,
 * SQL migrations), unpacked once per build under $CACHE_DIRECTORY, else `<tmpdir>/lintel-edge-<uid>`.
 *
 * No process ever moves or removes a copy another may be reading. Each unpack goes into a directory of
 * its own, `data-<digest>-<pid>-<random>`, marked whole by `.complete`, written last. It is published by
 * a symlink `data-<digest>` that names it, put in place by renaming a new symlink over the old one, in
 * one step. A start that finds the symlink naming a whole copy uses that copy, by its own name: should
 * the symlink change meanwhile, what the process reads stays where it is. A copy is removed only when
 * nothing can read it any more:
 *
 *  - its unpacking process (the pid in its name) has ended, so it will never be published again (the
 *    processes that share a cache directory are one user's, and see one another's pids);
 *  - then the symlink does not name it: once replaced, a symlink never names that copy again;
 *  - then no live process marks it as read (a file `.users/<pid>-<random>` in it).
 *
 * A process that adopts a published copy marks it first, then reads the symlink again, and uses the copy
 * only if the symlink still names it. So a copy a process uses was named by the symlink after the process
 * marked it, and any removal that finds it no longer named looks for the marks after that: it sees the
 * process's. Marks of ended processes are removed (a pid used again marks under another random name).
 *
 * A `data-<digest>` directory (not a symlink) was left by an earlier banner. Whole, it is used as it
 * is, never touched. Without `.complete` (an unpack cut short; systemd-tmpfiles ageing, which takes the
 * never-read empty marker first), no process reads it: one reads such a directory only once it found the
 * marker there, and none writes the marker into it. It is then moved aside (`data-<digest>.aside-…`)
 * and removed; should it not move, the process uses its own copy unpublished, and a later start removes
 * that copy once the process has ended.
 *
 * A cache directory that cannot be made, or that is not this user's alone, is refused with an error of
 * the code `LINTEL_ADDON_DIR_REFUSED`, as the SQLite addon's refusal of the same directory
 * (edge/src/storage/native-addon.ts): the command line answers it with one line and exit 2, which the
 * unit does not restart, rather than a stack trace. The first module that asks for a data file's place
 * meets it, which may be while modules load: cli.ts loads the rest inside its error handling for that.
 *
 * Kept apart from build.mjs (which builds on import) so that tests can run it.
 */
export const BANNER = `var __lintelFileUrl = (() => {
  const path = require("node:path");
  const url = require("node:url");
  let root;
  function alive(pid) {
    try {
      process.kill(pid, 0);
      return true;
    } catch (err) {
      return err.code === "EPERM";
    }
  }
  function unique() {
    return process.pid + "-" + require("node:crypto").randomBytes(6).toString("hex");
  }
  function attempt(action) {
    try {
      action();
      return true;
    } catch {
      return false;
    }
  }
  function complete(fs, dir) {
    return fs.existsSync(path.join(dir, ".complete"));
  }
  function readLink(fs, link) {
    try {
      return fs.readlinkSync(link);
    } catch {
      return undefined;
    }
  }
  function ended(pid) {
    return pid > 0 && pid !== process.pid && !alive(pid);
  }
  function marksIn(fs, dir) {
    try {
      return fs.readdirSync(path.join(dir, ".users"));
    } catch {
      return [];
    }
  }
  function markPid(mark) {
    return Number(/^([0-9]+)-/.exec(mark)?.[1]);
  }
  function removeEndedMarks(fs, dir) {
    for (const mark of marksIn(fs, dir)) if (ended(markPid(mark))) attempt(() => fs.unlinkSync(path.join(dir, ".users", mark)));
  }
  function removeLeftovers(fs, base) {
    let names = [];
    try {
      names = fs.readdirSync(base);
    } catch {}
    for (const name of names) {
      const where = path.join(base, name);
      const copy = /^(data-[0-9a-f]+)-([0-9]+)-[0-9a-f]+$/.exec(name);
      const pending = /^data-[0-9a-f]+[.]link-([0-9]+)-[0-9a-f]+$/.exec(name) || /^data-[0-9a-f]+[.]([0-9]+)[.]tmp$/.exec(name) || /^data-[0-9a-f]+[.]stale[.]([0-9]+)$/.exec(name);
      let unused = /^data-[0-9a-f]+[.]aside-[0-9]+-[0-9a-f]+$/.test(name);
      // In this order, each after the one before (see above): the copy's process, the symlink, the marks.
      if (copy) unused = ended(Number(copy[2])) && readLink(fs, path.join(base, copy[1])) !== name && marksIn(fs, where).every((mark) => ended(markPid(mark)));
      // A symlink not yet renamed into place, or what an earlier banner's process kept while it ran.
      if (pending) unused = ended(Number(pending[1]));
      if (unused) attempt(() => fs.rmSync(where, { recursive: true, force: true }));
    }
  }
  function adopt(fs, base, link) {
    let st;
    try {
      st = fs.lstatSync(link);
    } catch {
      return undefined;
    }
    if (st.isDirectory()) return complete(fs, link) ? link : undefined;
    const name = readLink(fs, link);
    if (!st.isSymbolicLink() || !name || !name.startsWith(path.basename(link) + "-") || name.includes("/")) return undefined;
    const dir = path.join(base, name);
    if (!complete(fs, dir)) return undefined;
    const mark = path.join(dir, ".users", unique());
    const marked = attempt(() => {
      fs.mkdirSync(path.join(dir, ".users"), { recursive: true, mode: 0o700 });
      fs.writeFileSync(mark, "", { mode: 0o600 });
    });
    if (!marked) return undefined;
    if (readLink(fs, link) !== name) {
      attempt(() => fs.unlinkSync(mark));
      return undefined;
    }
    removeEndedMarks(fs, dir);
    return dir;
  }
  function unpack(fs, sea, files, dir) {
    for (const file of files) {
      const dest = path.join(dir, file);
      fs.mkdirSync(path.dirname(dest), { recursive: true, mode: 0o700 });
      fs.writeFileSync(dest, Buffer.from(sea.getAsset(file)), { mode: 0o600 });
    }
    fs.writeFileSync(path.join(dir, ".complete"), "");
  }
  function publish(fs, base, link, own) {
    let st;
    try {
      st = fs.lstatSync(link);
    } catch {}
    if (st && st.isDirectory() && !complete(fs, link)) {
      const aside = link + ".aside-" + unique();
      if (attempt(() => fs.renameSync(link, aside))) attempt(() => fs.rmSync(aside, { recursive: true, force: true }));
    }
    const published = adopt(fs, base, link);
    if (published) {
      // Never published, so no other process knows it.
      attempt(() => fs.rmSync(own, { recursive: true, force: true }));
      return published;
    }
    const next = link + ".link-" + unique();
    // The rename fails over a directory left in the way (EISDIR): this process then uses its copy
    // unpublished.
    if (attempt(() => fs.symlinkSync(path.basename(own), next)) && !attempt(() => fs.renameSync(next, link))) attempt(() => fs.unlinkSync(next));
    return own;
  }
  function refused(message) {
    const hint = "; unpack it elsewhere: set CACHE_DIRECTORY=/var/cache/lintel-edge (as the unit does; a directory this user owns, mode 700)";
    return Object.assign(new Error(message + hint), { name: "CacheDirectoryError", code: "LINTEL_ADDON_DIR_REFUSED" });
  }
  function extract(sea) {
    const fs = require("node:fs");
    const os = require("node:os");
    const manifest = JSON.parse(sea.getAsset("lintel-manifest.json", "utf8"));
    const base = (process.env.CACHE_DIRECTORY || "").split(":")[0] || path.join(os.tmpdir(), "lintel-edge-" + (process.getuid ? process.getuid() : "user"));
    try {
      fs.mkdirSync(base, { recursive: true, mode: 0o700 });
    } catch (err) {
      throw refused("cannot create " + base + " to unpack the executable's data into (" + (err.code || err.message) + ")");
    }
    const st = fs.lstatSync(base);
    if (!st.isDirectory() || (process.getuid && st.uid !== process.getuid()) || (st.mode & 0o022) !== 0) {
      throw refused("refusing to unpack data into " + base + ": it must be a directory owned by this user and writable by no one else");
    }
    removeLeftovers(fs, base);
    const link = path.join(base, "data-" + manifest.digest.slice(0, 16));
    const found = adopt(fs, base, link);
    if (found) return found;
    const own = link + "-" + unique();
    unpack(fs, sea, manifest.files, own);
    return publish(fs, base, link, own);
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

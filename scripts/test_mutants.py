#!/usr/bin/env python3
"""Tests of scripts/mutants.py's harness (not of the mutations): the scratch copy is brought up
to date file by file, and a SIGTERM in the middle of a mutant leaves the tree as it was and the
scratch copy restored. No server and no build: `cargo` is a stand-in script on PATH.

    python3 scripts/test_mutants.py
"""
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mutants  # noqa: E402

# Answers what mutants.py asks cargo: the target directory, nextest's version, and a test run
# that says it started (the file $FAKE_DIR/running holds its pid) and then hangs.
FAKE_CARGO = """#!/usr/bin/env bash
case "$1 $2" in
    "metadata "*) printf '{"target_directory": "%s"}' "$FAKE_DIR/target" ;;
    "nextest --version") echo "cargo-nextest 0.9.0" ;;
    "nextest run") echo $$ >"$FAKE_DIR/running.tmp"; mv "$FAKE_DIR/running.tmp" "$FAKE_DIR/running"
                   exec sleep 120 ;;
    *) exit 2 ;;
esac
"""


def tree_state():
    """What `git status` says of the tree, and the text of every file a mutation edits."""
    status = subprocess.run(["git", "status", "--porcelain"], cwd=mutants.ROOT,
                            capture_output=True, text=True, check=True).stdout
    paths = {edit[0] for _, edits, _ in mutants.M for edit in edits}
    return status, {path: mutants.read(mutants.ROOT, path) for path in paths}


class Sync(unittest.TestCase):
    def test_only_what_differs_is_written_and_what_is_gone_is_removed(self):
        with tempfile.TemporaryDirectory() as src, tempfile.TemporaryDirectory() as dest:
            for name, text in [("a.rs", "a"), ("d/b.rs", "b"), ("d/c.rs", "c")]:
                os.makedirs(os.path.dirname(os.path.join(src, name)), exist_ok=True)
                mutants.write(src, name, text)
            self.assertEqual(mutants.sync(src, ["a.rs", "d/b.rs", "d/c.rs"], dest), 3)
            old = 1_000_000_000
            for name in ["a.rs", "d/b.rs"]:
                os.utime(os.path.join(dest, name), (old, old))
            mutants.write(src, "a.rs", "a, edited")
            mutants.write(dest, "d/b.rs", "b, a mutant left behind")
            mutants.write(dest, "stray.rs", "gone from the tree")
            self.assertEqual(mutants.sync(src, ["a.rs", "d/b.rs", "d/c.rs"], dest), 2)
            self.assertEqual(mutants.read(dest, "a.rs"), "a, edited")
            self.assertEqual(mutants.read(dest, "d/b.rs"), "b")
            self.assertFalse(os.path.exists(os.path.join(dest, "stray.rs")))
            # Rewritten files are newer than any build of them; an untouched one keeps its time.
            self.assertGreater(os.stat(os.path.join(dest, "a.rs")).st_mtime, old)
            self.assertGreater(os.stat(os.path.join(dest, "d/b.rs")).st_mtime, old)
            self.assertEqual(mutants.sync(src, ["a.rs", "d/b.rs", "d/c.rs"], dest), 0)


class Signals(unittest.TestCase):
    def stop_mid_mutant(self, signum):
        before = tree_state()
        with tempfile.TemporaryDirectory() as fake:
            bin_dir = os.path.join(fake, "bin")
            os.mkdir(bin_dir)
            with open(os.path.join(bin_dir, "cargo"), "w") as f:
                f.write(FAKE_CARGO)
            os.chmod(os.path.join(bin_dir, "cargo"), 0o755)
            env = dict(os.environ, FAKE_DIR=fake, PATH=f"{bin_dir}:{os.environ['PATH']}")
            run = subprocess.Popen([os.path.join(mutants.ROOT, "scripts", "mutants.py"),
                                    "renew ignores token"], env=env, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
            running = os.path.join(fake, "running")
            deadline = time.monotonic() + 60
            while not os.path.exists(running):
                self.assertIsNone(run.poll(), "mutants.py exited before its test run")
                self.assertLess(time.monotonic(), deadline, "the test run never started")
                time.sleep(0.05)
            copy = os.path.join(fake, "target", "mutants", "workspace")
            lease = mutants.read(copy, mutants.RENEW)
            self.assertNotEqual(lease, mutants.read(mutants.ROOT, mutants.RENEW),
                                "the mutant is in the scratch copy while its test runs")
            run.send_signal(signum)
            _, err = run.communicate(timeout=60)
            self.assertEqual(run.returncode, 128 + signum, err)
            self.assertIn(f"stopped by {signal.Signals(signum).name}", err)
            self.assertEqual(tree_state(), before, "the tree is as it was")
            self.assertEqual(mutants.read(copy, mutants.RENEW),
                             mutants.read(mutants.ROOT, mutants.RENEW), "the copy is restored")
            with open(running) as f:
                test_run = int(f.read())
            with self.assertRaises(ProcessLookupError, msg="the test run was stopped too"):
                os.kill(test_run, 0)

    def test_sigterm(self):
        self.stop_mid_mutant(signal.SIGTERM)

    def test_sighup(self):
        self.stop_mid_mutant(signal.SIGHUP)

    def test_sigint(self):
        self.stop_mid_mutant(signal.SIGINT)


class Nextest(unittest.TestCase):
    def test_a_run_without_nextest_stops_with_how_to_install_it(self):
        with tempfile.TemporaryDirectory() as fake:
            with open(os.path.join(fake, "cargo"), "w") as f:
                f.write("#!/bin/sh\necho 'error: no such command: `nextest`' >&2\nexit 101\n")
            os.chmod(os.path.join(fake, "cargo"), 0o755)
            env = dict(os.environ, PATH=f"{fake}:{os.environ['PATH']}")
            run = subprocess.run([sys.executable, os.path.join(mutants.ROOT, "scripts", "mutants.py"),
                                  "--ci"], env=env, capture_output=True, text=True)
        self.assertEqual(run.returncode, 1)
        self.assertEqual(run.stderr.strip().splitlines(), [mutants.NO_NEXTEST])
        self.assertIn("cargo install --locked cargo-nextest", run.stderr)


if __name__ == "__main__":
    unittest.main()

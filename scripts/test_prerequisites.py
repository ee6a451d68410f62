#!/usr/bin/env python3
"""Tests of scripts/prerequisites: silent when nothing is missing, and for what is missing the
one install command of the system it runs on, exit 3, and nothing installed when it is not root.
The machine's own tools are offered through a folder of links on PATH, from which the test takes
some away; `id` and `uname` are stand-ins that say "not root" and name the system.

    python3 scripts/test_prerequisites.py
"""
import os
import shutil
import subprocess
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "prerequisites")


def run(purpose, hide=(), uid=None, system=None, os_release=None):
    """Runs the script for `purpose` with the tools named in `hide` taken off PATH; with `uid`, an
    `id` that answers it; with `system`, a `uname -s` that answers it. Returns (code, stderr)."""
    with tempfile.TemporaryDirectory() as scratch:
        links = os.path.join(scratch, "bin")
        os.mkdir(links)
        for folder in os.environ["PATH"].split(os.pathsep):
            if not os.path.isdir(folder):
                continue
            for name in os.listdir(folder):
                target = os.path.join(folder, name)
                link = os.path.join(links, name)
                if name in hide or os.path.lexists(link) or not os.access(target, os.X_OK):
                    continue
                os.symlink(target, link)
        stand_ins = {"id": f"echo {uid}" if uid is not None else None,
                     "uname": f"echo {system}" if system is not None else None}
        for name, body in stand_ins.items():
            if body is not None:
                path = os.path.join(links, name)
                os.unlink(path)
                with open(path, "w") as stand_in:
                    stand_in.write(f"#!/bin/sh\n{body}\n")
                os.chmod(path, 0o755)
        env = {"PATH": links, "HOME": os.environ.get("HOME", "/")}
        if os_release is not None:
            release = os.path.join(scratch, "os-release")
            with open(release, "w") as out:
                out.write(os_release)
            env["PREREQUISITES_OS_RELEASE"] = release
        done = subprocess.run([shutil.which("bash"), SCRIPT, purpose], env=env,
                              capture_output=True, text=True, timeout=60)
        return done.returncode, done.stdout, done.stderr


DEBIAN = 'ID=debian\n'
UBUNTU = 'ID=ubuntu\nID_LIKE=debian\n'
FEDORA = 'ID=fedora\n'


class Prerequisites(unittest.TestCase):
    def setUp(self):
        code, out, err = run("test")
        if code != 0:
            self.skipTest(f"this machine lacks what the tests need: {err}")

    def test_nothing_missing_prints_nothing_and_installs_nothing(self):
        for purpose in ("demo", "test"):
            self.assertEqual(run(purpose, uid=1000), (0, "", ""))

    def test_a_user_without_root_on_debian_is_told_the_apt_command(self):
        code, out, err = run("test", hide={"promtool", "psql"}, uid=1000, os_release=DEBIAN)
        self.assertEqual(code, 3, err)
        self.assertEqual(out, "")
        self.assertIn("scripts/test needs promtool, psql, which this machine lacks.", err)
        self.assertIn("\n  sudo apt-get install -y prometheus postgresql-client\n", err)

    def test_ubuntu_counts_as_debian(self):
        code, _, err = run("test", hide={"promtool"}, uid=1000, os_release=UBUNTU)
        self.assertEqual(code, 3, err)
        self.assertIn("\n  sudo apt-get install -y prometheus\n", err)

    def test_fedora_is_told_the_dnf_command(self):
        code, _, err = run("test", hide={"promtool", "psql"}, uid=0, os_release=FEDORA)
        self.assertEqual(code, 3, err)
        self.assertIn("\n  sudo dnf install -y golang-github-prometheus postgresql\n", err)

    def test_macos_is_told_the_brew_command_once_per_formula(self):
        code, _, err = run("test", hide={"promtool", "psql"}, uid=501, system="Darwin")
        self.assertEqual(code, 3, err)
        self.assertIn("\n  brew install prometheus postgresql@15\n", err)

    def test_a_field_of_several_packages_and_homebrew_casks(self):
        browser = {"chromium", "chromium-browser", "google-chrome", "chromedriver"}
        code, _, err = run("test", hide=browser, uid=1000, os_release=DEBIAN)
        self.assertEqual(code, 3, err)
        self.assertIn("\n  sudo apt-get install -y chromium chromium-driver\n", err)
        code, _, err = run("test", hide=browser | {"promtool"}, uid=501, system="Darwin")
        self.assertEqual(code, 3, err)
        self.assertIn("\n  brew install prometheus && brew install --cask chromium chromedriver\n", err)

    def test_the_demo_does_not_need_what_only_the_tests_need(self):
        self.assertEqual(run("demo", hide={"promtool", "psql"}, uid=1000, os_release=DEBIAN),
                         (0, "", ""))

    def test_a_missing_cargo_nextest_is_installed_with_cargo(self):
        code, _, err = run("test", hide={"cargo-nextest", "promtool"}, uid=1000,
                           os_release=DEBIAN)
        self.assertEqual(code, 3, err)
        self.assertIn("promtool, cargo-nextest, which", err)
        self.assertIn("\n  sudo apt-get install -y prometheus && cargo install --locked cargo-nextest\n",
                      err)

    def test_a_bad_argument_is_exit_2(self):
        code, _, err = run("tests")
        self.assertEqual(code, 2)
        self.assertIn("expected `demo` or `test` (got `tests`)", err)


if __name__ == "__main__":
    unittest.main()

"""scripts/wheel-needed.py SITE_PACKAGES DIST_INFO: every shared object an installed dynet wheel holds finds
each library it NEEDS inside the installed package (through its RUNPATH/RPATH, $ORIGIN-relative) or is a
library the wheel's manylinux policy lets it take from the system (auditwheel's own list). The one exception
is libmpi, which only the MPI plugin (libdynet_mpi.so, dynet._dynet_mpi) may need: it is the system's
OpenMPI, loaded on first use of dy.mpi; libdynet.so and dynet._dynet must not need it.

Runs with a Python that has auditwheel (and so pyelftools): scripts/wheel's tools venv. Prints one line per
file and "wheel-needed: PASS ..." or "wheel-needed: FAIL ..." last; the exit status says the same.
"""
import importlib.resources
import json
import os
import re
import sys

from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile

MPI_PLUGINS = re.compile(r"^(libdynet_mpi\.so|_dynet_mpi\..*\.so)$")
MPI_LIBRARY = re.compile(r"^libmpi\.so\.\d+$")
# The dynamic loader is named by libraries linked against glibc's libc_nonshared; it is glibc itself.
LOADER = re.compile(r"^ld-linux[-.\w]*\.so\.\d+$")


def manylinux_whitelist(tag):
    policies = json.loads((importlib.resources.files("auditwheel.policy") / "manylinux-policy.json").read_text())
    for policy in policies:
        if policy["name"] == tag or tag in policy.get("aliases", []):
            return set(policy["lib_whitelist"])
    raise SystemExit("wheel-needed: FAIL (no auditwheel policy named %s)" % tag)


def dynamic(path):
    with open(path, "rb") as f:
        elf = ELFFile(f)
        needed, search = [], []
        for section in elf.iter_sections():
            if isinstance(section, DynamicSection):
                for tag in section.iter_tags():
                    if tag.entry.d_tag == "DT_NEEDED":
                        needed.append(tag.needed)
                    elif tag.entry.d_tag in ("DT_RUNPATH", "DT_RPATH"):
                        search += (tag.runpath if tag.entry.d_tag == "DT_RUNPATH" else tag.rpath).split(":")
        return needed, [d.replace("$ORIGIN", os.path.dirname(path)).replace("${ORIGIN}", os.path.dirname(path))
                        for d in search if d]


def main(site, dist_info):
    wheel_tag = next(line.split("-")[-1].strip() for line in open(os.path.join(site, dist_info, "WHEEL"))
                     if line.startswith("Tag:"))
    policy = re.match(r"(manylinux_\d+_\d+)_", wheel_tag)
    if not policy:
        return ["the wheel's tag %s is no manylinux tag" % wheel_tag], 0, wheel_tag
    whitelist = manylinux_whitelist(policy.group(1))
    files = [row.split(",")[0] for row in open(os.path.join(site, dist_info, "RECORD"))]
    objects = sorted(f for f in files if re.search(r"\.so(\.\d+)*$", f))
    if not any(os.path.basename(f).startswith("libdynet.so") for f in objects):
        return ["no libdynet.so in the wheel's RECORD"], 0, wheel_tag
    problems = []
    for rel in objects:
        path = os.path.realpath(os.path.join(site, rel))
        needed, search = dynamic(path)
        where = []
        for lib in needed:
            found = next((os.path.join(d, lib) for d in search if os.path.exists(os.path.join(d, lib))), None)
            inside = found and os.path.realpath(found).startswith(os.path.realpath(site) + os.sep)
            if inside:
                where.append(lib + " (wheel)")
            elif lib in whitelist or LOADER.match(lib):
                where.append(lib + " (system)")
            elif MPI_LIBRARY.match(lib) and MPI_PLUGINS.match(os.path.basename(rel)):
                where.append(lib + " (system OpenMPI, loaded on first use of dy.mpi)")
            else:
                problems.append("%s needs %s, neither in the wheel nor allowed by %s" % (rel, lib, wheel_tag))
        print("%s: %s" % (rel, ", ".join(where)))
    return problems, len(objects), wheel_tag


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit("usage: wheel-needed.py SITE_PACKAGES DIST_INFO")
    problems, count, tag = main(sys.argv[1], sys.argv[2])
    if problems:
        print("wheel-needed: FAIL (%s)" % "; ".join(problems))
        sys.exit(1)
    print("wheel-needed: PASS (%d shared objects; every NEEDED library is in the wheel or allowed by %s, libmpi "
          "only for the MPI plugin)" % (count, tag))

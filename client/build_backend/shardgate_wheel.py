"""The build backend of the Python package shardgate (PEP 517, in the tree: pyproject.toml's
`backend-path`): a pure-Python wheel from pyproject.toml and shardgate/, with the standard
library only, so `pip install ./client` needs no package index, no setuptools and no wheel
package, whichever python3 runs it, and writes nothing into the source tree (docs/tools.md §14).

The wheel is reproducible: its files in name order, each dated 1980-01-01, so the same tree
gives the same bytes.
"""
import base64
import hashlib
import os
import tomllib
import zipfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # client/
PACKAGE = "shardgate"
EPOCH = (1980, 1, 1, 0, 0, 0)


def _project():
    with open(os.path.join(HERE, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)["project"]


def _metadata(p):
    lines = ["Metadata-Version: 2.1", "Name: %s" % p["name"], "Version: %s" % p["version"],
             "Summary: %s" % p["description"], "Requires-Python: %s" % p["requires-python"]]
    lines += ["Classifier: %s" % c for c in p.get("classifiers", [])]
    lines.append("Description-Content-Type: text/markdown")
    with open(os.path.join(HERE, p["readme"]), encoding="utf-8") as f:
        readme = f.read()
    return ("\n".join(lines) + "\n\n" + readme).encode("utf-8")


def _entry_points(p):
    scripts = p.get("scripts", {})
    text = "[console_scripts]\n" + "".join("%s = %s\n" % kv for kv in sorted(scripts.items()))
    return text.encode("utf-8")


def _package_files():
    """(name in the wheel, bytes) of every module and py.typed, no bytecode."""
    root = os.path.join(HERE, PACKAGE)
    out = []
    for name in sorted(os.listdir(root)):
        if name.endswith(".py") or name == "py.typed":
            with open(os.path.join(root, name), "rb") as f:
                out.append(("%s/%s" % (PACKAGE, name), f.read()))
    return out


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d\n" % (name, digest, len(data))


def _wheel_name(p):
    return "%s-%s-py3-none-any.whl" % (p["name"], p["version"])


def _write(zf, name, data):
    info = zipfile.ZipInfo(name, EPOCH)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o644 << 16
    zf.writestr(info, data)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    p = _project()
    dist_info = "%s-%s.dist-info" % (p["name"], p["version"])
    files = _package_files() + [
        ("%s/METADATA" % dist_info, _metadata(p)),
        ("%s/WHEEL" % dist_info, b"Wheel-Version: 1.0\nGenerator: shardgate_wheel\n"
                                 b"Root-Is-Purelib: true\nTag: py3-none-any\n"),
        ("%s/entry_points.txt" % dist_info, _entry_points(p)),
    ]
    record = "".join(_record_line(n, d) for n, d in files) + "%s/RECORD,,\n" % dist_info
    files.append(("%s/RECORD" % dist_info, record.encode("utf-8")))
    name = _wheel_name(p)
    path = os.path.join(wheel_directory, name)
    with zipfile.ZipFile(path + ".part", "w") as zf:
        for n, d in files:
            _write(zf, n, d)
    os.replace(path + ".part", path)
    return name


def get_requires_for_build_wheel(config_settings=None):
    return []

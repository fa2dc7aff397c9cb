#!/usr/bin/env python3
"""Copies the code/**/*.py records of TorchScript archives into a directory tree.

usage: extract_code.py OUT_DIR ARCHIVE...

Each archive's records land in OUT_DIR/<name>/<record path>, where <name> is the archive's
parent folder name for files called model.pt (the wild corpus layout) and the file stem
otherwise. OUT_DIR is replaced atomically (written as OUT_DIR.tmp, then renamed), so a reader
never sees a half-written corpus. Fails if an archive holds no code/ record.
"""
import os
import shutil
import sys
import zipfile


def archive_name(path):
    base = os.path.basename(path)
    if base == "model.pt":
        return os.path.basename(os.path.dirname(os.path.abspath(path)))
    return os.path.splitext(base)[0]


def extract(archive, out_dir):
    """Writes the code/*.py records of `archive` under out_dir; returns how many."""
    count = 0
    with zipfile.ZipFile(archive) as z:
        for info in z.infolist():
            parts = info.filename.split("/")
            if len(parts) < 3 or parts[1] != "code" or not info.filename.endswith(".py"):
                continue
            dest = os.path.join(out_dir, archive_name(archive), *parts)
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            with open(dest, "wb") as f:
                f.write(z.read(info))
            count += 1
    return count


def main(argv):
    if len(argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    out_dir = argv[1]
    tmp = out_dir + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    total = 0
    for archive in argv[2:]:
        n = extract(archive, tmp)
        if n == 0:
            sys.stderr.write(f"{archive}: no code/ records\n")
            return 1
        total += n
    shutil.rmtree(out_dir, ignore_errors=True)
    os.rename(tmp, out_dir)
    print(f"extracted {total} code records from {len(argv) - 2} archives into {out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

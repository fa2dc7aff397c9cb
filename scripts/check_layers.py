#!/usr/bin/env python3
"""Checks every #include of src/ and include/ against the layer table of design.md.

Note [Layer check]
The layer table of ../shared/docs/design.md ("Layers (a folder each, dependencies point down
only)") says, per layer, which layers it may use. A file of layer L may include:
  - its own layer;
  - a layer L declares ("may use"), and what those declare in turn, transitively;
  - except through a facade: a layer that "may use: all" (api) is used as itself, not as a
    door to everything below it; tools/ sees api/, not ir/.
Anything else is an edge that points up or skips a layer, and fails the check with the file,
line and edge. Includes that name no layer ("x.h" beside the file, <fmt/format.h>) are not
layer edges.

Folders map to layers by the table's first column (`core/`, `api/` + `include/torchless/`);
src/sdk/ holds the C API and the shared library, which the table places in api. Sub-folders
belong to their top folder (convert/onnx/ is convert).

KNOWN_EDGES lists the edges the code has today and the table does not allow, each with why it
is still there; the check fails when one of them no longer occurs, so the list only shrinks.

The repository's README.md carries the same table (section "Layers and repository layout")
so that a clean clone can run the check; with --compare design.md the check also fails when
the two tables disagree (layers, folders or what each may use).

Usage: check_layers.py --design TABLE.md --root REPO [--known-edges] [--compare design.md]
Exit 0 when every edge is allowed; 1 with one line per bad edge; 2 on a table it cannot read.
"""

import argparse
import os
import re
import sys

# Folders that are not rows of the table, and the layer they belong to.
FOLDER_ALIASES = {"sdk": "api"}

# (from layer, to layer): why the edge is still there. Remove an entry when its edge is gone.
KNOWN_EDGES = {
    ("convert", "passes"): "convert/onnx/prepare.cpp runs lowering passes before export; they "
                           "belong in api's export pipeline (issue 16, part 5)",
    ("tools", "core"): "the CLI reads errors, .npy files and values from core/ directly",
    ("tools", "ir"): "graph, info, ops and export print and parse IR directly",
    ("tools", "ops"): "run, bench and export set the thread count through ops/parallel.h",
    ("tools", "passes"): "graph and export run passes by name",
    ("tools", "runtime"): "bench, info, ops and script use the kernel registry and interpreter",
    ("tools", "convert"): "compile and ops read engine records and converter coverage",
    ("tools", "frontend"): "code and script compile source directly",
    ("tools", "serialize"): "code and info read archives directly",
    ("server", "core"): "the protocol builds tensors and reads errors and types from core/, as "
                        "tools/ does; api/ does not re-export them",
}

INCLUDE_RE = re.compile(r'^\s*#\s*include\s*[<"]([^">]+)[">]')


class TableError(Exception):
    pass


def parse_table(text):
    """Returns (layers in table order, {layer: set of declared layers or {'all'}}, {folder: layer})
    from the first table of the section whose heading starts with `## Layers`."""
    lines = text.splitlines()
    start = None
    for i, line in enumerate(lines):
        if line.startswith("## Layers"):
            start = i
            break
    if start is None:
        raise TableError("no '## Layers' section")
    rows = []
    for line in lines[start + 1:]:
        if line.startswith("## "):
            break
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or set(cells[0]) <= set("-: ") or cells[0] == "layer":
            continue
        rows.append((cells[0], cells[2]))
    if not rows:
        raise TableError("the Layers section has no table rows")
    order, folders = [], {}
    for first, _ in rows:
        names = re.findall(r"`([^`]+)`", first)
        if not names:
            raise TableError(f"row without a `folder/`: {first}")
        layer = names[0].strip("/").split("/")[0]
        order.append(layer)
        for n in names:
            folders[n.strip("/")] = layer
    declared = {}
    for (first, uses), layer in zip(rows, order):
        if re.search(r"\ball\b", uses):
            declared[layer] = {"all"}
            continue
        declared[layer] = {l for l in order if l != layer and re.search(rf"\b{re.escape(l)}\b", uses)}
    return order, declared, folders


def allowed_layers(order, declared):
    """{layer: layers its files may include}, by Note [Layer check]."""
    def uses(layer):
        d = declared[layer]
        if d == {"all"}:
            return set(order[: order.index(layer)])
        return d

    allowed = {}
    for layer in order:
        seen, todo = set(), list(uses(layer))
        while todo:
            l = todo.pop()
            if l in seen:
                continue
            seen.add(l)
            if declared[l] != {"all"}:  # a facade is used as itself
                todo.extend(uses(l))
        allowed[layer] = seen | {layer}
    return allowed


def layer_of_path(rel, folders):
    """The layer of a repository path (src/ir/ir.h, include/torchless/c_api.h), or None."""
    parts = rel.split("/")
    if parts[0] == "include" and len(parts) > 1:
        return folders.get("include/" + parts[1])
    if parts[0] == "src" and len(parts) > 2:
        top = parts[1]
        return folders.get(top) or FOLDER_ALIASES.get(top)
    return None


def layer_of_include(inc, folders):
    """The layer an include names (`ir/ir.h`, `torchless/c_api.h`), or None for other includes."""
    parts = inc.split("/")
    if len(parts) < 2:
        return None
    if "include/" + parts[0] in folders:
        return folders["include/" + parts[0]]
    return folders.get(parts[0]) or FOLDER_ALIASES.get(parts[0])


def scan(root, folders):
    """Yields (path, line number, from layer, to layer, include) for each cross-layer include."""
    for top in ("src", "include"):
        base = os.path.join(root, top)
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames.sort()
            for name in sorted(filenames):
                if not name.endswith((".h", ".hpp", ".cpp", ".cc", ".inc")):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root).replace(os.sep, "/")
                src_layer = layer_of_path(rel, folders)
                if src_layer is None:
                    continue
                with open(path, encoding="utf-8", errors="replace") as f:
                    for lineno, line in enumerate(f, 1):
                        m = INCLUDE_RE.match(line)
                        if not m:
                            continue
                        dst = layer_of_include(m.group(1), folders)
                        if dst is not None and dst != src_layer:
                            yield rel, lineno, src_layer, dst, m.group(1)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--design", required=True, help="design.md (its Layers table)")
    ap.add_argument("--root", required=True, help="the repository (its src/ and include/)")
    ap.add_argument("--compare", help="another copy of the table (design.md) that must agree")
    ap.add_argument("--known-edges", action="store_true",
                    help="accept the edges of KNOWN_EDGES, and fail when one no longer occurs")
    args = ap.parse_args(argv)
    try:
        with open(args.design, encoding="utf-8") as f:
            order, declared, folders = parse_table(f.read())
    except (OSError, TableError) as e:
        print(f"check_layers: cannot read the layer table of {args.design}: {e}", file=sys.stderr)
        return 2
    bad = []
    if args.compare:
        try:
            with open(args.compare, encoding="utf-8") as f:
                other = parse_table(f.read())
        except (OSError, TableError) as e:
            print(f"check_layers: cannot read the layer table of {args.compare}: {e}", file=sys.stderr)
            return 2
        if (order, declared, folders) != other:
            bad.append(f"the layer tables of {args.design} and {args.compare} disagree: "
                       f"{(order, declared, folders)} != {other}")
    allowed = allowed_layers(order, declared)
    known = KNOWN_EDGES if args.known_edges else {}
    seen_known = set()
    for rel, lineno, src, dst, inc in scan(args.root, folders):
        if dst in allowed[src]:
            continue
        if (src, dst) in known:
            seen_known.add((src, dst))
            continue
        direction = "up" if order.index(dst) > order.index(src) else "past the layers it may use"
        bad.append(f"{rel}:{lineno}: layer {src} includes \"{inc}\" of layer {dst} ({direction}; "
                   f"{src} may use {', '.join(sorted(allowed[src] - {src})) or 'nothing'})")
    for edge in sorted(set(known) - seen_known):
        if (edge[0] in allowed and edge[1] in allowed[edge[0]]):
            bad.append(f"KNOWN_EDGES lists {edge[0]} -> {edge[1]}, which the table now allows: "
                       "remove the entry")
        else:
            bad.append(f"KNOWN_EDGES lists {edge[0]} -> {edge[1]}, which no longer occurs: "
                       "remove the entry")
    for line in bad:
        print(line, file=sys.stderr)
    if bad:
        print(f"check_layers: {len(bad)} include(s) against the layer table of {args.design}",
              file=sys.stderr)
        return 1
    print(f"check_layers: every include follows the layer table ({len(order)} layers)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Check user/provider-abi.h against rdma-core's libibverbs/driver.h.

For a set of rdma-core release tags (git, RDMA_CORE_GIT; default: the local
mirror) this
  1. compiles the tag's own definitions of the structs we declare (taken from
     its driver.h, built against its own verbs.h) and ours (against the
     installed verbs.h), prints sizeof/offsetof of every member, and compares;
  2. compiles our header followed by the tag's prototypes of every function we
     declare: a conflicting prototype is a compile error;
  3. checks, over every tag of each supported PABI, that the text of those
     structs, prototypes and command wrappers never changed.
Nothing from rdma-core is kept: the tag's text is compiled in a temporary
directory. TAP output; skips when there is no rdma-core git.
"""
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, "..", ".."))
HDR = os.path.join(TOP, "user", "provider-abi.h")
GIT = os.environ.get("RDMA_CORE_GIT", "/work/.mirror/linux-rdma+rdma-core/repo")
CC = os.environ.get("CC", "cc")

STRUCTS = ["verbs_match_ent", "verbs_device_ops", "verbs_device",
           "verbs_context_ops", "verbs_mr"]
# Same text in every tag, but the layout follows the struct ibv_qp_ex of
# the verbs.h it is compiled with (which grew in v44 and v45): its member
# types are checked, and its layout rule (comp_mask right after the union)
# is checked in each tag instead of comparing offsets with ours.
STRUCTS_VERBS_H = ["verbs_qp"]
ENUMS = ["ibv_mr_type"]
FUNCS = ["_verbs_init_and_alloc_context", "verbs_uninit_context",
         "verbs_set_ops", "ibv_cmd_get_context", "ibv_cmd_query_device_any",
         "ibv_cmd_query_port", "ibv_cmd_alloc_pd", "ibv_cmd_dealloc_pd",
         "ibv_read_ibdev_sysfs_file", "verbs_register_driver",
         "ibv_cmd_reg_mr", "ibv_cmd_dereg_mr", "ibv_cmd_create_cq",
         "ibv_cmd_destroy_cq", "ibv_cmd_create_qp_ex", "ibv_cmd_query_qp",
         "ibv_cmd_modify_qp", "ibv_cmd_destroy_qp", "ibv_cmd_create_ah",
         "ibv_cmd_destroy_ah", "ibv_cmd_attach_mcast", "ibv_cmd_detach_mcast",
         "ibv_cmd_resize_cq", "ibv_cmd_modify_cq", "ibv_cmd_rereg_mr",
         "ibv_cmd_create_cq_ex"]
# our wrapper struct -> (uverbs command enum, core kernel struct)
CMDS = {"ibv_get_context": ("IB_USER_VERBS_CMD_GET_CONTEXT", "ib_uverbs_get_context"),
        "ibv_alloc_pd": ("IB_USER_VERBS_CMD_ALLOC_PD", "ib_uverbs_alloc_pd"),
        "ibv_query_port": ("IB_USER_VERBS_CMD_QUERY_PORT", "ib_uverbs_query_port"),
        "ibv_reg_mr": ("IB_USER_VERBS_CMD_REG_MR", "ib_uverbs_reg_mr"),
        "ibv_create_cq": ("IB_USER_VERBS_CMD_CREATE_CQ", "ib_uverbs_create_cq"),
        "ibv_create_qp": ("IB_USER_VERBS_CMD_CREATE_QP", "ib_uverbs_create_qp"),
        "ibv_modify_qp": ("IB_USER_VERBS_CMD_MODIFY_QP", "ib_uverbs_modify_qp"),
        "ibv_query_qp": ("IB_USER_VERBS_CMD_QUERY_QP", "ib_uverbs_query_qp"),
        "ibv_resize_cq": ("IB_USER_VERBS_CMD_RESIZE_CQ", "ib_uverbs_resize_cq"),
        "ibv_rereg_mr": ("IB_USER_VERBS_CMD_REREG_MR", "ib_uverbs_rereg_mr")}
SUPPORTED_PABI = ("34", "57")

n = 0
failed = 0


def tap(good, name, detail=""):
    global n, failed
    n += 1
    if not good:
        failed += 1
    print(("ok" if good else "not ok"), n, name)
    for line in detail.splitlines():
        print("#", line)


def git(*args):
    return subprocess.run(["git", "-C", GIT] + list(args), check=True,
                          capture_output=True, text=True).stdout


def show(tag, path):
    return git("show", f"{tag}:{path}")


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def struct_text(src, name):
    """The full `struct name { ... };` definition in src."""
    m = re.search(r"^struct %s\s*\{" % re.escape(name), src, flags=re.M)
    if not m:
        return None
    depth, i = 0, m.end() - 1
    while True:
        if src[i] == "{":
            depth += 1
        elif src[i] == "}":
            depth -= 1
            if depth == 0:
                end = src.index(";", i)
                return src[m.start():end + 1]
        i += 1


def enum_text(src, name):
    """The full `enum name { ... };` definition in src."""
    m = re.search(r"^enum %s\s*\{[^}]*\};" % re.escape(name), src, flags=re.M)
    return m.group(0) if m else None


def members(body):
    """Member names of a struct definition (top level only)."""
    body = strip_comments(body)
    body = body[body.index("{") + 1:body.rindex("}")]
    flat, depth = "", 0
    for ch in body:            # drop nested { ... } of inline unions/structs
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif depth == 0:
            flat += ch
    names = []
    for decl in flat.split(";"):
        decl = decl.strip()
        if not decl:
            continue
        if decl in ("union", "struct"):     # anonymous: see expand
            names.append("<anon>")
            continue
        m = re.search(r"\(\s*\*\s*(\w+)\s*\)", decl)
        if not m:
            m = re.search(r"(\w+)\s*(\[[^\]]*\])?\s*$", decl)
        names.append(m.group(1))
    return names


def prototype(src, fn):
    m = re.search(r"^[^\n#]*\b%s\(" % re.escape(fn), src, flags=re.M)
    if not m:
        return None
    return src[m.start():src.index(";", m.start()) + 1]


def norm(text):
    return " ".join(strip_comments(text).split())


_pabi = {}


def pabi_of(tag):
    if tag in _pabi:
        return _pabi[tag]
    m = re.search(r'IBVERBS_PABI_VERSION "(\d+)"', show(tag, "CMakeLists.txt"))
    _pabi[tag] = m.group(1)
    return _pabi[tag]


def compile_run(tmp, name, code, incs, defines=(), run=True):
    c = os.path.join(tmp, name + ".c")
    exe = os.path.join(tmp, name)
    with open(c, "w") as f:
        f.write(code)
    cmd = [CC, "-std=c11", "-D_GNU_SOURCE", "-Wall", "-Werror", "-o", exe, c]
    cmd += ["-I" + i for i in incs] + ["-D" + d for d in defines]
    if not run:
        cmd.insert(1, "-fsyntax-only")
        cmd.remove("-o")
        cmd.remove(exe)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        return None, r.stderr
    if not run:
        return "", ""
    return subprocess.run([exe], check=True, capture_output=True,
                          text=True).stdout, ""


def layout_main(ours_members):
    lines = ["int main(void)", "{"]
    for s, ms in ours_members.items():
        if s in STRUCTS_VERBS_H:
            continue
        lines.append(f'\tprintf("{s} size %zu\\n", sizeof(struct {s}));')
        for m in [m for m in ms if m != "<anon>"]:
            lines.append(f'\tprintf("{s}.{m} %zu %zu\\n", '
                         f'offsetof(struct {s}, {m}), '
                         f'sizeof(((struct {s} *)0)->{m}));')
    return lines


def check_tag(tmp, tag, ours_members):
    pabi = pabi_of(tag)
    drv = show(tag, "libibverbs/driver.h")
    d = os.path.join(tmp, tag)
    for sub in ("infiniband", "rdma"):
        os.makedirs(os.path.join(d, sub), exist_ok=True)
    for src, dst in (("libibverbs/verbs.h", "infiniband/verbs.h"),
                     ("libibverbs/verbs_api.h", "infiniband/verbs_api.h"),
                     ("kernel-headers/rdma/ib_user_ioctl_verbs.h",
                      "infiniband/ib_user_ioctl_verbs.h"),
                     ("kernel-headers/rdma/ib_user_ioctl_verbs.h",
                      "rdma/ib_user_ioctl_verbs.h"),
                     ("kernel-headers/rdma/ib_user_verbs.h",
                      "rdma/ib_user_verbs.h")):
        with open(os.path.join(d, dst), "w") as f:
            f.write(show(tag, src))

    # 1. layout: theirs (their verbs.h) vs ours (installed verbs.h)
    node = struct_text(show(tag, "ccan/list.h"), "list_node")
    theirs = ["#include <stdio.h>", "#include <stddef.h>",
              "#include <stdatomic.h>", "#include <stdbool.h>",
              "#include <infiniband/verbs.h>", "#include <rdma/ib_user_verbs.h>",
              node, "struct verbs_sysfs_dev;", "struct verbs_mr;",
              "struct verbs_xrcd;"] + [enum_text(drv, e) or "" for e in ENUMS]
    missing = [s for s in STRUCTS + STRUCTS_VERBS_H
               if struct_text(drv, s) is None]
    theirs += [struct_text(drv, s) or "" for s in STRUCTS + STRUCTS_VERBS_H]
    main = layout_main(ours_members)
    for w, (_, core) in CMDS.items():
        main.append(f'\tprintf("{w} size %zu\\n", sizeof(struct ib_uverbs_cmd_hdr)'
                    f' + sizeof(struct {core}));')
    theirs_out, err1 = compile_run(d, "theirs", "\n".join(theirs + main + ["}"]) + "\n",
                                   [d])
    ours = ["#include <stdio.h>", '#include "provider-abi.h"']
    main = layout_main(ours_members)
    for w in CMDS:
        main.append(f'\tprintf("{w} size %zu\\n", sizeof(struct {w}));')
    ours_out, err2 = compile_run(d, "ours", "\n".join(ours + main + ["}"]) + "\n",
                                 [os.path.dirname(HDR)], [f"SOFTHCA_PABI={pabi}"]
                                 if pabi in SUPPORTED_PABI else [])
    if theirs_out is None or ours_out is None or missing:
        tap(False, f"{tag}: layout of {', '.join(STRUCTS)}",
            (f"missing in driver.h: {missing}\n" if missing else "")
            + err1 + err2)
    else:
        diff = [f"{a}  !=  {b}" for a, b in zip(ours_out.splitlines(),
                                                 theirs_out.splitlines()) if a != b]
        nops = len(members(struct_text(drv, "verbs_context_ops")))
        sizes = [l.replace(" size ", " ") for l in ours_out.splitlines()
                 if " size " in l]
        tap(not diff, f"{tag}: layout of {', '.join(STRUCTS)} and command "
            f"wrappers matches ({nops} ops)",
            "\n".join(diff) if diff else "sizes: " + ", ".join(sizes))

    # 1a. verbs_qp in the tag's own verbs.h: comp_mask right after the
    # union, as provider-abi.h asserts for ours.
    code = theirs + ["int main(void)", "{",
                     '\tprintf("%zu %zu %zu\\n", offsetof(struct verbs_qp, comp_mask), '
                     'sizeof(struct ibv_qp_ex), sizeof(struct verbs_qp));', "}"]
    out, err = compile_run(d, "theirs_qp", "\n".join(code) + "\n", [d])
    if out is None:
        tap(False, f"{tag}: verbs_qp.comp_mask follows the ibv_qp_ex union", err)
    else:
        off, qpex, size = out.split()
        tap(off == qpex, f"{tag}: verbs_qp.comp_mask follows the ibv_qp_ex "
            f"union", f"here: comp_mask at {off}, sizeof(ibv_qp_ex) {qpex}, "
            f"sizeof(verbs_qp) {size}")

    # 1b. member types: theirs (struct tags renamed, same TU as ours) must
    # be type-compatible member by member. Inline unions/structs are distinct
    # types by definition, so compare their members; the list link is an
    # anonymous struct in ours and a struct list_node in theirs: its layout
    # is checked above.
    renamed = [re.sub(r"^struct (\w+)\s*\{", r"struct theirs_\1 {",
                      struct_text(drv, s) or "", count=1)
               for s in STRUCTS + STRUCTS_VERBS_H]
    code = ['#include "provider-abi.h"', node, *renamed]
    expand = {("verbs_match_ent", "u"): ["u.modalias", "u.driver_id"],
              ("verbs_device", "entry"): [],
              ("verbs_qp", "<anon>"): ["qp", "qp_ex"]}
    for s, ms in ours_members.items():
        for m in [x for m0 in ms for x in expand.get((s, m0), [m0])]:
            code.append(f"_Static_assert(__builtin_types_compatible_p("
                        f"__typeof__(((struct {s} *)0)->{m}), "
                        f"__typeof__(((struct theirs_{s} *)0)->{m})), "
                        f'"{s}.{m}");')
    code.append("int main(void) { return 0; }")
    out, err = compile_run(d, "types", "\n".join(code) + "\n",
                           [os.path.dirname(HDR)],
                           [f"SOFTHCA_PABI={pabi}"] if pabi in SUPPORTED_PABI
                           else [], run=False)
    tap(out is not None, f"{tag}: every member has the same type as in "
        f"rdma-core", err)

    # 2. prototypes: ours followed by theirs must compile
    if pabi not in SUPPORTED_PABI:
        tap(False, f"{tag}: PABI {pabi} is not one provider-abi.h supports")
        return pabi
    protos = [prototype(drv, f) for f in FUNCS]
    lost = [f for f, p in zip(FUNCS, protos) if p is None]
    code = "\n".join(['#include "provider-abi.h"',
                      f"#define verbs_register_driver verbs_register_driver_{pabi}"]
                     + [p for p in protos if p] + ["int main(void) { return 0; }"]) + "\n"
    out, err = compile_run(d, "protos", code, [os.path.dirname(HDR)],
                           [f"SOFTHCA_PABI={pabi}"], run=False)
    tap(out is not None and not lost,
        f"{tag}: PABI {pabi}; the tag's prototypes of the {len(FUNCS)} "
        f"functions we call agree with ours", f"not found: {lost}\n{err}"
        if lost or out is None else "")
    return pabi


def main():
    if not os.path.isdir(GIT) or subprocess.run(
            ["git", "-C", GIT, "rev-parse", "v36.0"], capture_output=True).returncode:
        print(f"1..0 # SKIP no rdma-core git at {GIT} (set RDMA_CORE_GIT)")
        return 0

    tags = [t for t in git("tag", "--list", "v[0-9]*", "--sort=version:refname").split()
            if re.fullmatch(r"v\d+\.\d+", t) and int(t[1:].split(".")[0]) >= 36]
    newest = {}
    for t in tags:
        newest[int(t[1:].split(".")[0])] = t
    pick = os.environ.get("TAGS", "").split() or \
        ["v36.0", "v44.0"] + [newest[m] for m in (56, 57, 58) if m in newest]

    ours_src = open(HDR).read()
    ours_members = {s: members(struct_text(ours_src, s))
                    for s in STRUCTS + STRUCTS_VERBS_H}
    tests_per_tag = 4
    print(f"1..{len(pick) * tests_per_tag + 1}")
    print(f"# ours: verbs_context_ops has {len(ours_members['verbs_context_ops'])} ops")

    with tempfile.TemporaryDirectory() as tmp:
        for t in pick:
            check_tag(tmp, t, ours_members)

    # 3. text unchanged within each supported PABI, over every release tag
    by_pabi, changes = {}, []
    for t in tags:
        p = pabi_of(t)
        if p not in SUPPORTED_PABI:
            continue
        drv = show(t, "libibverbs/driver.h")
        kabi = show(t, "libibverbs/kern-abi.h")
        sig = tuple(norm(struct_text(drv, s) or "")
                    for s in STRUCTS + STRUCTS_VERBS_H) + \
            tuple(norm(enum_text(drv, e) or "") for e in ENUMS) + \
            tuple(norm(prototype(drv, f) or "") for f in FUNCS) + \
            tuple(bool(re.search(r"DECLARE_CMDX?\(%s,\s*%s,\s*%s[,)]" % (e, w, c), kabi))
                  for w, (e, c) in CMDS.items())
        if p in by_pabi and by_pabi[p][1] != sig:
            changes.append(f"{t} differs from {by_pabi[p][0]} (PABI {p})")
        by_pabi.setdefault(p, (t, sig))
    rng = {p: [t for t in tags if pabi_of(t) == p] for p in by_pabi}
    tap(not changes, "declared structs, prototypes and command wrappers are "
        "unchanged within each PABI",
        "\n".join(changes + [f"PABI {p}: {v[0]} .. {v[-1]} ({len(v)} tags)"
                             for p, v in rng.items()]))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

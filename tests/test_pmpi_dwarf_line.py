"""Source lines of code addresses from DWARF's line-number program
(csrc/pmpi/dwarf_line.c), which names an OpenMP construct as Score-P does
("!$omp parallel @halo.c:63"), through the harness tests/c/dwarf_line_check.c
built here with AddressSanitizer and UBSan:

* programs compiled here by gcc and gfortran, with the line tables of
  DWARF 3, 4 and 5 that the assembler writes (-gdwarf-3, -gdwarf-4, -g),
  the ones gcc writes itself (-gno-as-loc-support), 64-bit DWARF
  (-gdwarf64) and a DWARF 5 file table with MD5 sums, at -O0 and -O2: the
  first instruction of each function is at the line that opens it (-O0),
  and every address of every function agrees with binutils' addr2line,
  the independent decoder;
* a hand-made .debug_line of every version 2-5 with every standard and
  extended opcode, the DWARF 5 entry formats and forms, 32- and 64-bit
  units, VLIW operation indices, a line 0, a version it does not know and
  headers it cannot read, each answer worked out by hand;
* corrupt input: every prefix of each section (as it is, and with its
  last unit's length cut to fit), thousands of random byte changes: no
  crash, no read out of bounds, no endless loop, and a truncated section
  finds nothing or what the whole one finds.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CSRC = ROOT / "csrc"

HALO_C = """\
/* a test program of tests/test_pmpi_dwarf_line.py */
#include <stdio.h>

__attribute__((noinline)) double first(double x)
{ /* @first */
    return x * 3 + 1;
}

#include "kern.h"

double util_norm(const double *a, int n);

__attribute__((noinline)) double halo(double *a, int n)
{ /* @halo */
    double s = 0;
    for (int i = 0; i < n; i++)
        s += scale(a[i]) * i;
    return s;
}

int main(int argc, char **argv)
{ /* @main */
    double a[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    (void)argv;
    a[0] = first(argc);
    printf("%g %g\\n", halo(a, 8), util_norm(a, 8));
    return 0;
}
"""

KERN_H = """\
static inline double scale(double x)
{ /* @scale */
    return x * 1.5 + (x > 3 ? 2 : 1);
}
"""

UTIL_C = """\
__attribute__((noinline)) double util_norm(const double *a, int n)
{ /* @util_norm */
    double s = 0;
    for (int i = 0; i < n; i++)
        s += a[i] * a[i];
    return s;
}
"""

SWEEP_F90 = """\
module solver
contains
  subroutine halo(a, n) ! @__solver_MOD_halo
    integer, intent(in) :: n
    double precision, intent(inout) :: a(n)
    integer :: i
    do i = 2, n
      a(i) = a(i) + 0.5d0 * a(i - 1)
    end do
  end subroutine halo
end module solver

subroutine sweep(a, n) ! @sweep_
  integer, intent(in) :: n
  double precision, intent(inout) :: a(n)
  a = a * 2
end subroutine sweep

program main3d ! @MAIN__
  use solver
  double precision :: a(16)
  a = 1
  call halo(a, 16)
  call sweep(a, 16)
  print *, sum(a)
end program main3d
"""

SOURCES = {"halo.c": HALO_C, "kern.h": KERN_H, "util.c": UTIL_C, "sweep.f90": SWEEP_F90}

# name -> (compiler, flags, line-table version, 64-bit DWARF)
C_BUILDS = {
    "c-dwarf5-O0": ("gcc", ["-g", "-O0"], 5, False),
    "c-dwarf5-O2": ("gcc", ["-g", "-O2"], 5, False),
    "c-dwarf4-O0": ("gcc", ["-gdwarf-4", "-O0"], 4, False),
    "c-dwarf4-O2": ("gcc", ["-gdwarf-4", "-O2"], 4, False),
    "c-dwarf3-O2": ("gcc", ["-gdwarf-3", "-O2"], 3, False),
    # the line table written by gcc instead of the assembler: other opcodes
    "c-dwarf4-gcc-O0": ("gcc", ["-gdwarf-4", "-gno-as-loc-support", "-O0"], 4, False),
    "c-dwarf64-O2": ("gcc", ["-g", "-gdwarf64", "-gno-as-loc-support", "-O2"], 5, True),
    "c-dwarf64-O0": ("gcc", ["-g", "-gdwarf64", "-gno-as-loc-support", "-O0"], 5, True),
}
F_BUILDS = {
    "f-dwarf5-O0": ("gfortran", ["-g", "-O0"], 5, False),
    "f-dwarf5-O2": ("gfortran", ["-g", "-O2"], 5, False),
    "f-dwarf4-O0": ("gfortran", ["-gdwarf-4", "-O0"], 4, False),
    "f-dwarf4-O2": ("gfortran", ["-gdwarf-4", "-O2"], 4, False),
}
MD5_BUILD = "c-dwarf5-md5-O2"
BUILDS = [*C_BUILDS, *F_BUILDS, MD5_BUILD]


def tool(name: str) -> str:
    path = shutil.which(name)
    assert path, f"{name} is missing (.ci/setup installs it)"
    return path


def clean_env() -> dict[str, str]:
    # .ci/sanitize preloads the runtimes into pytest: the harness has its own
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS")}
    env["ASAN_OPTIONS"] = "detect_leaks=1:abort_on_error=0"
    env["UBSAN_OPTIONS"] = "halt_on_error=1:print_stacktrace=1"
    return env


def sanitizer_flags(cc: str) -> list[str]:
    """AddressSanitizer and UBSan where gcc has their runtimes."""
    for lib in ("libasan.so", "libubsan.so"):
        found = subprocess.run([cc, f"-print-file-name={lib}"], capture_output=True, text=True).stdout.strip()
        if not os.path.isabs(found) or not os.path.exists(found):
            return []
    return ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer"]


@pytest.fixture(scope="module")
def harness(tmp_path_factory) -> Path:
    cc = tool("gcc")
    exe = tmp_path_factory.mktemp("harness") / "dwarf_line_check"
    subprocess.run([cc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-g", *sanitizer_flags(cc),
                    "-D_POSIX_C_SOURCE=200809L", f"-I{CSRC}", str(ROOT / "tests" / "c" / "dwarf_line_check.c"),
                    str(CSRC / "pmpi" / "dwarf_line.c"), str(CSRC / "pmpi" / "elf_file.c"), "-o", str(exe)],
                   check=True)
    return exe


def check(harness: Path, elf: Path, *args: str, timeout: float = 600) -> list[str]:
    run = subprocess.run([str(harness), str(elf), *args], capture_output=True, text=True, env=clean_env(),
                         timeout=timeout)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-4000:]
    return run.stdout.splitlines()


def lookup(harness: Path, elf: Path, queries: list[str]) -> dict[str, str]:
    out = check(harness, elf, *queries)
    assert len(out) == len(queries), out
    return dict(line.split(" ", 1) for line in out)


@pytest.fixture(scope="module")
def programs(tmp_path_factory) -> dict[str, Path]:
    src = tmp_path_factory.mktemp("src")
    for name, text in SOURCES.items():
        (src / name).write_text(text)
    out = {}
    for name, (compiler, flags, _, _) in {**C_BUILDS, **F_BUILDS}.items():
        files = ["halo.c", "util.c"] if compiler == "gcc" else ["sweep.f90"]
        out[name] = src / name
        subprocess.run([tool(compiler), *flags, *files, "-o", name], cwd=src, check=True)
    # DWARF 5 file entries with MD5 sums (DW_LNCT_MD5, DW_FORM_data16), as
    # clang writes them: gcc's assembly with sums added to its .file lines
    gcc = tool("gcc")
    subprocess.run([gcc, "-g", "-O2", "-S", "halo.c", "-o", "halo.s"], cwd=src, check=True)
    text = (src / "halo.s").read_text()
    text, n = re.subn(r'^(\s*\.file\s+\d+\s+.*"[^"]*")$', r"\1 md5 0x00112233445566778899aabbccddeeff", text,
                      flags=re.M)
    assert n >= 2
    (src / "halo_md5.s").write_text(text)
    subprocess.run([gcc, "-g", "-O2", "halo_md5.s", "util.c", "-o", MD5_BUILD], cwd=src, check=True)
    out[MD5_BUILD] = src / MD5_BUILD
    return out


def section(elf: Path, name: str, tmp: Path) -> bytes:
    dump = tmp / (elf.name + name)
    subprocess.run([tool("objcopy"), f"--dump-section={name}={dump}", str(elf), str(tmp / "scratch.o")],
                   check=True)
    return dump.read_bytes()


def functions(elf: Path) -> dict[str, tuple[int, int]]:
    """The functions of a program: name -> (link-time address, size)."""
    out = subprocess.run([tool("nm"), "-S", "--defined-only", str(elf)], capture_output=True, text=True,
                         check=True).stdout
    funcs = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "Tt" and int(parts[1], 16) > 0:
            funcs[parts[3]] = (int(parts[0], 16), int(parts[1], 16))
    return funcs


def addr2line(elf: Path, addrs: list[int]) -> list[str]:
    """addr2line's answers as the harness writes them: "base:line", "??" without a line."""
    out = subprocess.run([tool("addr2line"), "-e", str(elf), *map(hex, addrs)], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert len(out) == len(addrs)
    answers = []
    for line in out:
        path, _, number = line.split(" (discriminator")[0].rpartition(":")
        answers.append(f"{os.path.basename(path)}:{number}" if number.isdigit() and int(number) > 0 else "??")
    return answers


def marker_lines(source: str) -> dict[str, tuple[int, int]]:
    """name -> (the line marked `@name`, the line that ends the function)."""
    lines = source.splitlines()
    out = {}
    for i, text in enumerate(lines):
        m = re.search(r"@(\w+)", text)
        if m:
            end = next(k for k in range(i + 1, len(lines)) if re.match(r"\s*(\}|end\b)", lines[k]))
            out[m.group(1)] = (i + 1, end + 1)
    return out


def expected_starts(build: str) -> dict[str, tuple[str, int, int]]:
    """function -> (its file, the line that opens it, the line that ends it)."""
    files = ["sweep.f90"] if build.startswith("f-") else ["halo.c", "kern.h", "util.c"]
    return {name: (f, start, end) for f in files for name, (start, end) in marker_lines(SOURCES[f]).items()}


# ---- programs of gcc and gfortran --------------------------------------------------------------


@pytest.mark.parametrize("build", BUILDS)
def test_line_table_as_built(build, programs, tmp_path):
    """The build has the line table it is meant to test: its version, and
    its unit length field (0xffffffff: 64-bit DWARF)."""
    if build == MD5_BUILD:
        version, dwarf64 = 5, False
    else:
        _, _, version, dwarf64 = {**C_BUILDS, **F_BUILDS}[build]
    data = section(programs[build], ".debug_line", tmp_path)
    if dwarf64:
        assert data[:4] == b"\xff\xff\xff\xff"
        assert struct.unpack_from("<H", data, 12)[0] == version
    else:
        assert data[:4] != b"\xff\xff\xff\xff"
        assert struct.unpack_from("<H", data, 4)[0] == version
    if build == MD5_BUILD:
        dump = subprocess.run([tool("readelf"), "--debug-dump=rawline", str(programs[build])], capture_output=True,
                              text=True, check=True).stdout
        assert "MD5" in dump


@pytest.mark.parametrize("build", BUILDS)
def test_first_instruction_of_each_function(build, harness, programs):
    """A function's first instruction, looked up by its symbol, is at the
    line that opens it (at -O0: the `{` of C, the `subroutine`/`program`
    statement of Fortran); optimised, at a line of its own body, as
    addr2line has it."""
    prog = programs[build]
    funcs = functions(prog)
    expected = {name: where for name, where in expected_starts(build).items() if name in funcs}
    assert {"halo", "main"} <= set(expected) or {"__solver_MOD_halo", "sweep_", "MAIN__"} <= set(expected)
    found = lookup(harness, prog, list(expected))
    oracle = dict(zip(expected, addr2line(prog, [funcs[name][0] for name in expected])))
    for name, (file, start, end) in expected.items():
        assert found[name] == oracle[name], (build, name)
        got_file, _, got_line = found[name].rpartition(":")
        assert got_file == file, (build, name, found[name])
        if "-O0" in build:
            assert int(got_line) == start, (build, name, found[name])
        else:
            assert start <= int(got_line) <= end, (build, name, found[name])


@pytest.mark.parametrize("build", BUILDS)
def test_every_address_agrees_with_addr2line(build, harness, programs):
    """Every address of every function of the program (the C runtime's
    too, which has no line information): the same file and line as
    addr2line, or nothing where addr2line has nothing."""
    prog = programs[build]
    addrs = [a for start, size in functions(prog).values() for a in range(start, start + size)]
    assert len(addrs) > 200
    found = lookup(harness, prog, [hex(a) for a in addrs])
    oracle = addr2line(prog, addrs)
    wrong = [(hex(a), found[hex(a)], want) for a, want in zip(addrs, oracle) if found[hex(a)] != want]
    assert not wrong, wrong[:20]
    named = sum(want != "??" for want in oracle)
    assert named > len(addrs) // 2


def test_dwarf5_file_register_starts_at_1(harness, tmp_path):
    """DWARF 5 numbers the files from 0 (the primary source file), and the
    file register of a sequence starts at 1 all the same (DWARF 5, section
    6.2.2, table 6.4): at -O0, gcc's code of a function from a header comes
    first and the assembler makes the header file 1.  addr2line of binutils
    2.40 takes file 0 there; readelf's decoder (objdump --dwarf=decodedline)
    and the harness name the header, at addr2line's lines."""
    (tmp_path / "kern.h").write_text(KERN_H)
    (tmp_path / "lead.c").write_text('#include "kern.h"\nint main(int argc, char **argv)\n'
                                     "{\n    (void)argv;\n    return (int)scale(argc);\n}\n")
    prog = tmp_path / "lead"
    subprocess.run([tool("gcc"), "-g", "-O0", "lead.c", "-o", "lead"], cwd=tmp_path, check=True)
    start, size = functions(prog)["scale"]
    addrs = list(range(start, start + size))
    found = lookup(harness, prog, [hex(a) for a in addrs])
    assert found[hex(start)] == f"kern.h:{marker_lines(KERN_H)['scale'][0]}"
    assert all(found[hex(a)].startswith("kern.h:") for a in addrs)
    lines = [want.rpartition(":")[2] for want in addr2line(prog, addrs)]
    assert [found[hex(a)].rpartition(":")[2] for a in addrs] == lines
    decoded = subprocess.run([tool("objdump"), "--dwarf=decodedline", str(prog)], capture_output=True, text=True,
                             check=True).stdout
    rows = re.findall(r"^(\S+)\s+(\d+)\s+(0x[0-9a-f]+)", decoded, re.M)
    assert ("kern.h", "2", hex(start)) in rows


# ---- a hand-made .debug_line -----------------------------------------------------------------


def uleb(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def sleb(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        done = (n == 0 and not b & 0x40) or (n == -1 and b & 0x40)
        out.append(b | (0 if done else 0x80))
        if done:
            return bytes(out)


def u16(n: int) -> bytes:
    return struct.pack("<H", n)


def u32(n: int) -> bytes:
    return struct.pack("<I", n)


def u64(n: int) -> bytes:
    return struct.pack("<Q", n)


def ext(op: int, payload: bytes = b"") -> bytes:
    return b"\0" + uleb(1 + len(payload)) + bytes([op]) + payload


def set_address(a: int, size: int = 8) -> bytes:
    return ext(2, a.to_bytes(size, "little"))


END = ext(1)
COPY, NEGATE_STMT, BASIC_BLOCK, CONST_ADD_PC = b"\x01", b"\x06", b"\x07", b"\x08"
PROLOGUE_END, EPILOGUE_BEGIN = b"\x0a", b"\x0b"


def define_file(name: bytes) -> bytes:
    return ext(3, name + b"\0" + uleb(0) + uleb(0) + uleb(0))


def advance_pc(n: int) -> bytes:
    return b"\x02" + uleb(n)


def advance_line(d: int) -> bytes:
    return b"\x03" + sleb(d)


def set_file(f: int) -> bytes:
    return b"\x04" + uleb(f)


def special(address: int, line: int, opcode_base: int = 13, line_base: int = -5, line_range: int = 14) -> bytes:
    op = (line - line_base) + line_range * address + opcode_base
    assert opcode_base <= op <= 255
    return bytes([op])


STANDARD_LENGTHS = [0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1]


def unit(version: int, tables: bytes, program: bytes, *, min_inst: int = 1, max_ops: int = 1, line_base: int = -5,
         line_range: int = 14, opcode_base: int = 13, lengths: list[int] | None = None,
         dwarf64: bool = False) -> bytes:
    if lengths is None:
        lengths = STANDARD_LENGTHS[:opcode_base - 1]
    assert len(lengths) == opcode_base - 1
    header = (bytes([min_inst]) + (bytes([max_ops]) if version >= 4 else b"")
              + bytes([1, line_base & 0xFF, line_range, opcode_base]) + bytes(lengths) + tables)
    offset = u64 if dwarf64 else u32
    body = u16(version) + (b"\x08\x00" if version >= 5 else b"") + offset(len(header)) + header + program
    length = b"\xff\xff\xff\xff" + u64(len(body)) if dwarf64 else u32(len(body))
    return length + body


def tables_v4(dirs: list[bytes], files: list[tuple[bytes, int]]) -> bytes:
    return (b"".join(d + b"\0" for d in dirs) + b"\0"
            + b"".join(name + b"\0" + uleb(d) + uleb(0) + uleb(0) for name, d in files) + b"\0")


def entries_v5(formats: list[tuple[int, int]], entries: list[list[bytes]]) -> bytes:
    return (bytes([len(formats)]) + b"".join(uleb(t) + uleb(f) for t, f in formats) + uleb(len(entries))
            + b"".join(b"".join(e) for e in entries))


class Strings:
    """A string section being written: offsets of the strings added."""

    def __init__(self) -> None:
        self.data = bytearray(b"\0")

    def add(self, s: bytes, size: int = 4) -> bytes:
        off = len(self.data)
        self.data += s + b"\0"
        return off.to_bytes(size, "little")


PATH, DIRECTORY_INDEX, TIMESTAMP, SIZE, MD5 = 1, 2, 3, 4, 5
(FORM_BLOCK2, FORM_DATA2, FORM_DATA4, FORM_DATA8, FORM_STRING, FORM_BLOCK, FORM_BLOCK1, FORM_DATA1, FORM_SDATA,
 FORM_STRP, FORM_UDATA, FORM_ADDR) = 0x03, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B, 0x0D, 0x0E, 0x0F, 0x01
FORM_STRX, FORM_DATA16, FORM_LINE_STRP, FORM_STRX1, FORM_STRX4 = 0x1A, 0x1E, 0x1F, 0x25, 0x28


def synthetic() -> tuple[bytes, bytes, bytes, dict[str, str]]:
    """A .debug_line of many units, its .debug_line_str and .debug_str,
    and the answer for each address asked."""
    line_str, strs = Strings(), Strings()
    units, expect = [], {}

    # DWARF 2: 4-byte addresses; opcode_base 10, so 10-12 are special opcodes
    units.append(unit(2, tables_v4([b"/src"], [(b"lib/a.c", 1), (b"b.h", 0)]),
                      set_address(0x1000, 4) + advance_line(9) + COPY  # 0x1000 a.c:10
                      + special(4, 1, opcode_base=10, line_base=-3, line_range=10)  # 0x1004 a.c:11
                      + set_file(2) + b"\x09" + u16(0x10) + advance_line(5) + COPY  # 0x1014 b.h:16
                      + b"\x0c"  # special: address +0, line -1: 0x1014 b.h:15 takes its place
                      + CONST_ADD_PC + advance_line(2) + COPY  # (255 - 10) / 10 = 24: 0x102c b.h:17
                      + advance_pc(8) + END,  # 0x1034
                      opcode_base=10, line_base=-3, line_range=10))
    expect.update({0xFFF: "??", 0x1000: "a.c:10", 0x1003: "a.c:10", 0x1004: "a.c:11", 0x1013: "a.c:11",
                   0x1014: "b.h:15", 0x102B: "b.h:15", 0x102C: "b.h:17", 0x1033: "b.h:17", 0x1034: "??"})

    # DWARF 3: 4-byte instructions; const_add_pc, an unknown extended
    # opcode, define_file, the flag opcodes, set_column, set_isa, set_discriminator
    units.append(unit(3, tables_v4([], [(b"c.c", 0)]),
                      set_address(0x2000) + b"\x05" + uleb(7) + PROLOGUE_END + COPY  # 0x2000 c.c:1
                      + ext(4, uleb(3)) + special(1, 2)  # 0x2004 c.c:3
                      + CONST_ADD_PC  # 17 instructions: 0x2048
                      + ext(0x80, b"xyz") + define_file(b"gen/d.c") + set_file(2) + NEGATE_STMT + BASIC_BLOCK
                      + EPILOGUE_BEGIN + b"\x0c" + uleb(5) + advance_line(1) + COPY  # 0x2048 d.c:4
                      + b"\x09" + u16(6) + advance_line(1) + COPY  # bytes, not instructions: 0x204e d.c:5
                      + advance_pc(3) + END,  # 0x205a
                      min_inst=4))
    expect.update({0x2000: "c.c:1", 0x2003: "c.c:1", 0x2004: "c.c:3", 0x2047: "c.c:3", 0x2048: "d.c:4",
                   0x204D: "d.c:4", 0x204E: "d.c:5", 0x2059: "d.c:5", 0x205A: "??"})

    # DWARF 4: opcode 13, unknown, takes two operands; line 0; two sequences
    units.append(unit(4, tables_v4([], [(b"e.c", 0), (b"f.c", 0)]),
                      set_address(0x3000) + advance_line(99) + COPY  # 0x3000 e.c:100
                      + b"\x0d" + uleb(300) + uleb(5)
                      + special(2, 0, opcode_base=14)  # 0x3002 e.c:100
                      + advance_line(-100) + special(2, 0, opcode_base=14)  # 0x3004 line 0
                      + advance_line(7) + special(2, 0, opcode_base=14)  # 0x3006 e.c:7
                      + advance_pc(2) + END  # 0x3008
                      + set_address(0x3100) + set_file(2) + advance_line(41) + COPY  # 0x3100 f.c:42
                      + advance_pc(0x10) + END,  # 0x3110
                      opcode_base=14, lengths=STANDARD_LENGTHS + [2]))
    expect.update({0x3000: "e.c:100", 0x3001: "e.c:100", 0x3002: "e.c:100", 0x3004: "??", 0x3005: "??",
                   0x3006: "e.c:7", 0x3007: "e.c:7", 0x3008: "??", 0x30FF: "??", 0x3100: "f.c:42",
                   0x310F: "f.c:42", 0x3110: "??"})

    # DWARF 4, VLIW: 3 operations an instruction of 8 bytes
    units.append(unit(4, tables_v4([], [(b"v.c", 0)]),
                      set_address(0x4000) + COPY  # 0x4000 v.c:1
                      + advance_pc(2) + advance_line(1) + COPY  # 0x4000 op 2 v.c:2 takes its place
                      + advance_pc(2) + advance_line(1) + COPY  # 0x4008 op 1 v.c:3
                      + special(5, 1)  # op 1 + 5: 0x4018 op 0 v.c:4
                      + advance_pc(3) + END,  # 0x4020
                      min_inst=8, max_ops=3))
    expect.update({0x4000: "v.c:2", 0x4007: "v.c:2", 0x4008: "v.c:3", 0x4017: "v.c:3", 0x4018: "v.c:4",
                   0x401F: "v.c:4", 0x4020: "??"})

    # DWARF 5: directories by .debug_line_str, files by inline strings with
    # every kind of value besides; file 0 used; a file that is not there
    md5 = bytes(range(16))
    file_format = [(PATH, FORM_STRING), (DIRECTORY_INDEX, FORM_UDATA), (MD5, FORM_DATA16), (SIZE, FORM_DATA4),
                   (TIMESTAMP, FORM_BLOCK), (0x2001, FORM_DATA8), (0x2002, FORM_DATA1), (0x2003, FORM_DATA2),
                   (0x2004, FORM_SDATA), (0x2005, FORM_BLOCK1), (0x2006, FORM_BLOCK2)]

    def file5(path: bytes, d: int) -> list[bytes]:
        return [path + b"\0", uleb(d), md5, u32(1234), uleb(3) + b"abc", u64(7), b"\x01", u16(2), sleb(-70),
                b"\x02xy", u16(1) + b"z"]

    units.append(unit(5, entries_v5([(PATH, FORM_LINE_STRP)], [[line_str.add(b"/build")], [line_str.add(b"inc")]])
                      + entries_v5(file_format, [file5(b"main.c", 0), file5(b"main.c", 0), file5(b"util.h", 1),
                                                 file5(b"sub/deep/w.f90", 0)]),
                      set_address(0x5000) + set_file(0) + advance_line(4) + COPY  # 0x5000 main.c:5
                      + set_file(2) + special(8, 2)  # 0x5008 util.h:7
                      + set_file(3) + special(8, 3)  # 0x5010 w.f90:10
                      + set_file(9) + special(8, 1)  # 0x5018 file 9: none
                      + advance_pc(8) + END))  # 0x5020
    expect.update({0x5000: "main.c:5", 0x5007: "main.c:5", 0x5008: "util.h:7", 0x5010: "w.f90:10",
                   0x5017: "w.f90:10", 0x5018: "??", 0x5020: "??"})

    # DWARF 5, 64-bit: 8-byte string offsets; the file register starts at 1
    units.append(unit(5, entries_v5([(PATH, FORM_STRING)], [[b"/b64\0"]])
                      + entries_v5([(PATH, FORM_LINE_STRP), (DIRECTORY_INDEX, FORM_DATA1)],
                                   [[line_str.add(b"x64.c", 8), b"\0"], [line_str.add(b"/i/y64.h", 8), b"\0"]]),
                      set_address(0x6000) + advance_line(19) + COPY  # 0x6000 y64.h:20
                      + set_file(0) + special(4, 1)  # 0x6004 x64.c:21
                      + advance_pc(4) + END,  # 0x6008
                      dwarf64=True))
    expect.update({0x6000: "y64.h:20", 0x6003: "y64.h:20", 0x6004: "x64.c:21", 0x6008: "??"})

    # DWARF 5: paths in .debug_str; string indices (not readable without
    # .debug_str_offsets) skipped by their size
    units.append(unit(5, entries_v5([(PATH, FORM_STRP)], [[strs.add(b"/s")]])
                      + entries_v5([(PATH, FORM_STRP), (DIRECTORY_INDEX, FORM_UDATA), (0x2005, FORM_STRX),
                                    (0x2006, FORM_STRX1), (0x2007, FORM_STRX4)],
                                   [[strs.add(b"s.c"), uleb(0), uleb(300), b"\1", u32(4)]] * 2),
                      set_address(0x7000) + COPY + advance_pc(2) + END))
    expect.update({0x7000: "s.c:1", 0x7001: "s.c:1", 0x7002: "??"})

    # DWARF 5: a path given by string index: its rows name no file
    units.append(unit(5, entries_v5([(PATH, FORM_STRING)], [[b"/x\0"]])
                      + entries_v5([(PATH, FORM_STRX1)], [[b"\0"], [b"\1"]]),
                      set_address(0x8000) + COPY + advance_pc(2) + END))
    expect.update({0x8000: "??"})

    # units passed over: a version it does not know, a header with
    # line_range 0, a DWARF 5 entry form of unknown size (DW_FORM_addr)
    units.append(u32(12) + u16(6) + bytes(range(10)))
    units.append(unit(4, tables_v4([], [(b"g.c", 0)]), set_address(0xA000) + COPY + advance_pc(2) + END,
                      line_range=0))
    units.append(unit(5, entries_v5([(PATH, FORM_ADDR)], [[u64(0)]]) + entries_v5([(PATH, FORM_STRING)], [[b"h.c\0"]]),
                      set_address(0xB000) + COPY + advance_pc(2) + END))
    expect.update({0xA000: "??", 0xB000: "??"})

    # and a unit after them all is still found
    units.append(unit(4, tables_v4([], [(b"last.c", 0)]), set_address(0xC000) + COPY + advance_pc(1) + END))
    expect.update({0xC000: "last.c:1", 0xC001: "??"})
    return b"".join(units), bytes(line_str.data), bytes(strs.data), {hex(a): want for a, want in expect.items()}


def assemble(tmp: Path, sections: dict[str, bytes]) -> Path:
    """An ELF object file with these sections as they are."""
    text = []
    for name, data in sections.items():
        text.append(f'.section {name},"",@progbits')
        text += [".byte " + ",".join(str(b) for b in data[i:i + 16]) for i in range(0, len(data), 16)]
    (tmp / "synthetic.s").write_text("\n".join(text) + "\n")
    obj = tmp / "synthetic.o"
    subprocess.run([tool("gcc"), "-c", str(tmp / "synthetic.s"), "-o", str(obj)], check=True)
    return obj


@pytest.fixture
def synthetic_elf(tmp_path) -> tuple[Path, dict[str, str]]:
    line, line_str, strs, expect = synthetic()
    obj = assemble(tmp_path, {".debug_line": line, ".debug_line_str": line_str, ".debug_str": strs})
    assert section(obj, ".debug_line", tmp_path) == line
    return obj, expect


def test_hand_made_line_table(harness, synthetic_elf):
    """Each address of the hand-made units at the row worked out by hand."""
    obj, expect = synthetic_elf
    assert lookup(harness, obj, list(expect)) == expect


# ---- corrupt input -------------------------------------------------------------------------------


def sample(prog: Path) -> list[str]:
    """Addresses to ask: each function's start and every 5th address of it."""
    addrs = set()
    for start, size in functions(prog).values():
        addrs.update(range(start, start + size, 5))
        addrs.add(start)
    return [hex(a) for a in sorted(addrs)]


CORRUPTED = ["c-dwarf5-O2", "c-dwarf64-O0", "f-dwarf4-O0", "f-dwarf5-O2", MD5_BUILD]


def test_every_prefix_of_hand_made_section(harness, synthetic_elf):
    obj, expect = synthetic_elf
    (line,) = check(harness, obj, "--prefixes", *expect)
    runs, found, differing = map(int, re.fullmatch(r"prefixes (\d+) found (\d+) differing (\d+)", line).groups())
    assert differing == 0 and runs > 1000 and found > 0, line


@pytest.mark.parametrize("build", CORRUPTED)
def test_every_prefix_of_real_section(build, harness, programs):
    """Every prefix of the section, as it is (the unit it ends in too long
    for it) and with that unit cut there: never a crash or a read past the
    end (AddressSanitizer), and whatever a prefix finds is what the whole
    section finds: rows are only taken when complete."""
    prog = programs[build]
    (line,) = check(harness, prog, "--prefixes", *sample(prog))
    runs, found, differing = map(int, re.fullmatch(r"prefixes (\d+) found (\d+) differing (\d+)", line).groups())
    assert differing == 0 and runs > 200 and found > 0, line


@pytest.mark.parametrize("build", [*CORRUPTED, "synthetic"])
def test_random_byte_changes(build, harness, programs, synthetic_elf):
    """A few bytes of .debug_line changed at random, 3000 times (and
    .debug_line_str cut short now and then): every lookup ends, found or not."""
    prog = synthetic_elf[0] if build == "synthetic" else programs[build]
    queries = list(synthetic_elf[1]) if build == "synthetic" else sample(prog)[::3]
    (line,) = check(harness, prog, "--flips", str(len(build) * 7919), "3000", *queries)
    m = re.fullmatch(r"flips 3000 found (\d+)", line)
    assert m and int(m.group(1)) > 0, line


# ---- ws_symbol_source: the process's own objects ---------------------------------------------

WORK_C = """\
__attribute__((noinline)) int work_probe(int x)
{ /* @work_probe */
    return x + 40;
}
"""


def build_id(elf: Path) -> str:
    notes = subprocess.run([tool("readelf"), "-n", str(elf)], capture_output=True, text=True, check=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", notes)
    assert m, notes
    return m.group(1)


@pytest.mark.parametrize("debug", ["in the file", "in the file, no PIE", "by build id", "by debuglink", "none"])
def test_symbol_source_in_the_process(debug, tmp_path):
    """ws_symbol_source (csrc/pmpi/symtab.c) in a program of its own
    (tests/c/symbol_source_check.c, with a shared library): a function's
    first line, the line of a call from its return address less 1, a
    function of the library (relocated), the library again (its lines
    kept from the first time), a variable (no line); the line information
    in the file itself, or in separate debugging information found by
    build id under WAITSCOPE_DEBUG_DIRS or by GNU debuglink, or nowhere."""
    harness_c = ROOT / "tests" / "c" / "symbol_source_check.c"
    (tmp_path / "work.c").write_text(WORK_C)
    gcc = tool("gcc")
    pie = ["-no-pie"] if debug == "in the file, no PIE" else []
    subprocess.run([gcc, "-g", "-O0", "-fPIC", "-shared", "work.c", "-o", "libwork.so"], cwd=tmp_path, check=True)
    # mpicc for mpi.h, which csrc/pmpi/pmpi.h includes; no MPI call is made
    subprocess.run([tool("mpicc.mpich"), "-std=c11", "-Wall", "-Wextra", "-Werror", "-g", "-O0", *pie,
                    *sanitizer_flags(gcc), "-D_POSIX_C_SOURCE=200809L", f"-I{CSRC}", str(harness_c),
                    *(str(CSRC / "pmpi" / f) for f in ("symtab.c", "dwarf.c", "dwarf_line.c", "elf_file.c")),
                    "-L.", "-lwork", f"-Wl,-rpath,{tmp_path}", "-ldl", "-o", "check"], cwd=tmp_path, check=True)
    debug_dirs = tmp_path / "debug"
    debug_dirs.mkdir()
    if debug in ("by build id", "by debuglink", "none"):
        objcopy = tool("objcopy")
        for name in ("check", "libwork.so"):
            elf = tmp_path / name
            separate = tmp_path / f"{name}.debug"
            subprocess.run([objcopy, "--only-keep-debug", str(elf), str(separate)], check=True)
            subprocess.run([objcopy, "--strip-debug", str(elf)], check=True)
            if debug == "by build id":
                bid = build_id(elf)
                target = debug_dirs / ".build-id" / bid[:2] / f"{bid[2:]}.debug"
                target.parent.mkdir(parents=True, exist_ok=True)
                separate.rename(target)
            elif debug == "by debuglink":
                subprocess.run([objcopy, f"--add-gnu-debuglink={separate}", str(elf)], cwd=tmp_path, check=True)
            else:
                separate.unlink()
            assert b".debug_line" not in subprocess.run([tool("readelf"), "-S", str(elf)], capture_output=True,
                                                        check=True).stdout
    env = clean_env()
    env["WAITSCOPE_DEBUG_DIRS"] = str(debug_dirs)
    run = subprocess.run([str(tmp_path / "check")], capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr[-4000:]
    found = dict(line.split(" ", 1) for line in run.stdout.splitlines())
    marks = marker_lines(harness_c.read_text())
    if debug == "none":
        want = dict.fromkeys(("probe", "call", "work_probe", "work_probe_again", "variable"), "??")
    else:
        work = f"work.c:{marker_lines(WORK_C)['work_probe'][0]}"
        want = {"probe": f"symbol_source_check.c:{marks['probe'][0]}",
                "call": f"symbol_source_check.c:{marks['call'][0]}",
                "work_probe": work, "work_probe_again": work, "variable": "??"}
    assert found == want

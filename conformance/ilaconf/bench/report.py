"""make bench's output: the table on stdout, BENCH.md's section, the plot.

All of them read the summary that bench.summarize() writes to
out/bench.json, so make bench-doc can render a past run.
"""

import statistics
import subprocess
from pathlib import Path

from . import paired

# The columns, as in driver.py: ours, the in-tree routes, the in-tree
# mapping table on the receive side (it translates before early demux), and
# the floor: ours with the translation compiled out.
IMPLS_BENCHED = ("module", "intree+patches", "intree+patches-map", "floor")


def columns(result: dict[str, object]) -> list[str]:
    """The columns a run measured, in its order (an older out/bench.json may
    lack some; IMPL=external:DIR adds some)."""
    return list(result["workloads"][0]["ratio"])


def table(result: dict[str, object]) -> list[str]:
    cols = columns(result)
    lines = [f"# ILA/plain ratio, median [min-max] over {result['rounds']} rounds of "
             f"{result['seconds']} s pairs; the plain rate of the module's pairs (TCG, not a result)",
             f"{'workload':<32}" + "".join(f"{c:>26}" for c in cols) + f"{'plain (median)':>22}"]
    for w in result["workloads"]:
        cells = "".join(f"{r['median']:>12.3f} [{r['min']:.3f}-{r['max']:.3f}]"
                        for r in (w["ratio"][c] for c in cols))
        plain = statistics.median(w["rates"]["plain/module"])
        lines.append(f"{w['name']:<32}{cells}{plain:>14.0f} {w['unit']}")
    close = paired.close_rows(result)
    if close:
        lines += ["", f"# rows within {paired.CLOSE:.2f} of module, paired by round (sign test, "
                  f"{paired.ALPHA:.0%}):", *close]
    t = result["translation"]
    lines += ["", f"translation (ila_ref_xlat, UDP): {t['xlat_ns']['median']:.1f} ns per call; "
              f"route lookup (ip6_route_output): {t['lookup_ns']['median']:.1f} ns; "
              f"ratio {t['xlat_per_lookup']['median']:.3f} "
              f"[{t['xlat_per_lookup']['min']:.3f}-{t['xlat_per_lookup']['max']:.3f}]"]
    if result["scale"]:
        lines += ["", f"{'routes':>8} {'add plain':>11} {'add ila':>10} {'dump plain':>11} "
                  f"{'dump ila':>9} {'del plain':>10} {'del ila':>8} {'lookup plain':>13} "
                  f"{'lookup ila':>11} {'ila/plain':>10}"]
        for row in result["scale"]:
            p, i = row["plain"], row["ila"]
            lines.append(f"{row['routes']:>8} {p['add_ms']:>8.0f} ms {i['add_ms']:>7.0f} ms "
                         f"{p['dump_ms']:>8.0f} ms {i['dump_ms']:>6.0f} ms {p['del_ms']:>7.0f} ms "
                         f"{i['del_ms']:>5.0f} ms {p['lookup_ns']:>10.0f} ns {i['lookup_ns']:>8.0f} ns "
                         f"{i['lookup_ns'] / p['lookup_ns']:>10.3f}")
    return lines


DOC_BEGIN, DOC_END = "<!-- bench:begin -->", "<!-- bench:end -->"


def markdown(result: dict[str, object]) -> str:
    """BENCH.md's figures section (make bench-doc), from out/bench.json."""
    cols = columns(result)
    out = [f"Measured {result['measured']} on kernel {result['kernel']}, {result['rounds']} rounds "
           f"of {result['seconds']} s per flow{' (BENCH_QUICK: a smoke run)' if result['quick'] else ''}"
           f"; `make bench` took {result['wall_s']:.0f} s.", "",
           "| workload | " + " | ".join(f"{c}: ILA/plain median [min-max]" for c in cols)
           + " | plain rate (module's runs) |", "| --- |" + " ---: |" * (len(cols) + 1)]
    for w in result["workloads"]:
        cells = " | ".join(f"**{r['median']:.3f}** [{r['min']:.3f}-{r['max']:.3f}]"
                           for r in (w["ratio"][c] for c in cols))
        out.append(f"| {w['name']} | {cells} | "
                   f"{statistics.median(w['rates']['plain/module']):.0f} {w['unit']} |")
    close = paired.close_rows(result)
    if close:
        out += ["", f"Rows where a column's median is within {paired.CLOSE:.2f} of ours, "
                "compared round by round (the paired difference's sign test at "
                f"{paired.ALPHA:.0%}; `conformance/ilaconf/bench/paired.py`):", "",
                *[f"- {line}" for line in close]]
    t = result["translation"]
    out += ["", f"Translation: one `ila_ref_xlat()` of a UDP datagram takes "
            f"{t['xlat_ns']['median']:.0f} ns, one `ip6_route_output()` {t['lookup_ns']['median']:.0f} ns "
            f"(TCG): a translation costs **{t['xlat_per_lookup']['median']:.3f}** route lookups "
            f"[{t['xlat_per_lookup']['min']:.3f}-{t['xlat_per_lookup']['max']:.3f}].", ""]
    if result["scale"]:
        out += ["| routes | add plain | add ILA | dump plain | dump ILA | delete plain | delete ILA "
                "| lookup plain | lookup ILA | lookup ILA/plain |", "| ---: |" + " ---: |" * 9]
        for row in result["scale"]:
            p, i = row["plain"], row["ila"]
            out.append(f"| {row['routes']:,} | {p['add_ms']:.0f} ms | {i['add_ms']:.0f} ms | "
                       f"{p['dump_ms']:.0f} ms | {i['dump_ms']:.0f} ms | {p['del_ms']:.0f} ms | "
                       f"{i['del_ms']:.0f} ms | {p['lookup_ns']:.0f} ns | {i['lookup_ns']:.0f} ns | "
                       f"{i['lookup_ns'] / p['lookup_ns']:.3f} |")
    return "\n".join(out)


def plot(result: dict[str, object], svg: Path) -> str:
    """One SVG of the ILA/plain ratio per workload, with its min-max spread."""
    data = svg.with_suffix(".dat")
    cols = columns(result)
    rows = []
    for i, w in enumerate(result["workloads"]):
        cells = " ".join(f"{w['ratio'][c]['median']:.4f} {w['ratio'][c]['min']:.4f} "
                         f"{w['ratio'][c]['max']:.4f}" for c in cols)
        rows.append(f'{i} "{w["name"]}" {cells}')
    data.write_text("\n".join(rows) + "\n")
    titles = {"module": " (ours)", "floor": " (ours, nothing translated)"}
    series = ", \\\n     ".join(
        f"'{data if i == 0 else ''}' using ($1{(i - (len(cols) - 1) / 2) * 0.2:+.2f}):{3 + 3 * i}:"
        f"{4 + 3 * i}:{5 + 3 * i}{':xtic(2)' if i == 0 else ''} with yerrorbars pt {7 - 2 * i} "
        f"title \"{c + titles.get(c, '')}\"" for i, c in enumerate(cols))
    script = f"""set terminal svg size 1100,600 dynamic noenhanced font "sans,11"
set output '{svg}'
set title "ILA/plain ratio per workload (median, bars min-max over {result['rounds']} rounds)"
set ylabel "rate with ILA / rate with a plain route"
set xrange [-0.6:{len(rows) - 0.4}]
set yrange [0.5:1.1]
set bmargin 12
set xtics rotate by -40 left
set grid ytics
set key bottom left opaque box
plot {series}, \\
     0.98 with lines dashtype 2 lc rgb "#008000" title "our goal: 0.98 (2%)", \\
     0.902 with lines dashtype 3 lc rgb "#c00000" title "seed: 0.902 (netperf TCP_RR, 10%)"
"""
    gp = svg.with_suffix(".gp")
    gp.write_text(script)
    try:
        subprocess.run(["gnuplot", str(gp)], check=True, capture_output=True, text=True)
    except FileNotFoundError:
        return "gnuplot is missing: apt-get install gnuplot-nox (make bench installs it)"
    except subprocess.CalledProcessError as e:
        return f"gnuplot failed: {e.stderr.strip()}"
    return ""

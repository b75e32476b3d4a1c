"""Known-item questions about the Linux kernel's subsystems, through a real gnod on the
index scale.py keeps (`scale.py --home DIR` first; nothing here indexes).

    python benchmarks/kernel_questions.py --home DIR [--per-query]

Each question names a subsystem as a developer would ask about it ("how does printk
work", "slab allocator", "page reclaim"); its answers are the files that implement or
document it (kernel/printk/printk.c; mm/slab.c, mm/slub.c, …), judged from what the
kernel's files hold before any ranking change was measured on them. A `search` with 20
results each. Prints mrr_at_20= (the mean reciprocal rank of the first answer),
hits_at_10= (share of questions with an answer in the top 10) and queries=; with
--per-query, each question's first answer's rank.
"""

from __future__ import annotations

import argparse
import os
import statistics

from common import Daemon, emit

JUDGED: list[tuple[str, list[str]]] = [
    ("how does printk work", ["kernel/printk/printk.c"]),
    (
        "slab allocator",
        ["mm/slab.c", "mm/slub.c", "mm/slob.c", "mm/slab_common.c", "include/linux/slab.h", "mm/slab.h"],
    ),
    ("what happens when a process forks", ["kernel/fork.c"]),
    ("jbd2 journal commit", ["fs/jbd2/commit.c", "fs/jbd2/journal.c"]),
    ("out of memory killer", ["mm/oom_kill.c"]),
    ("kernel coding style", ["Documentation/process/coding-style.rst"]),
    (
        "how to submit a patch",
        ["Documentation/process/submitting-patches.rst", "Documentation/process/submit-checklist.rst"],
    ),
    ("memory barriers", ["Documentation/memory-barriers.txt"]),
    ("workqueue implementation", ["kernel/workqueue.c"]),
    ("timer wheel", ["kernel/time/timer.c"]),
    ("signal delivery to a process", ["kernel/signal.c"]),
    ("futex wait and wake", ["kernel/futex/core.c", "kernel/futex/waitwake.c"]),
    ("cgroup core", ["kernel/cgroup/cgroup.c"]),
    ("kprobes", ["kernel/kprobes.c"]),
    ("function tracer ftrace", ["kernel/trace/ftrace.c"]),
    ("tcp congestion control", ["net/ipv4/tcp_cong.c"]),
    ("usb hub driver", ["drivers/usb/core/hub.c"]),
    ("pci bus enumeration and probing", ["drivers/pci/probe.c"]),
    ("dma mapping api", ["kernel/dma/mapping.c", "Documentation/core-api/dma-api.rst"]),
    ("mmap system call", ["mm/mmap.c"]),
    ("page cache", ["mm/filemap.c"]),
    ("swap file handling", ["mm/swapfile.c"]),
    ("vmalloc", ["mm/vmalloc.c"]),
    ("huge pages hugetlb", ["mm/hugetlb.c"]),
    ("loading a kernel module", ["kernel/module/main.c"]),
    ("what happens on kernel panic", ["kernel/panic.c"]),
    ("bpf verifier", ["kernel/bpf/verifier.c"]),
    ("x86 page fault handler", ["arch/x86/mm/fault.c"]),
    ("CFS scheduler fair class", ["kernel/sched/fair.c"]),
    ("buddy page allocator", ["mm/page_alloc.c"]),
    ("how does RCU work", ["Documentation/RCU/whatisRCU.rst", "kernel/rcu/tree.c"]),
    ("path name lookup", ["fs/namei.c", "Documentation/filesystems/path-lookup.rst"]),
    ("process exit", ["kernel/exit.c"]),
    ("kernel threads kthread", ["kernel/kthread.c"]),
    ("request_irq and interrupt handling", ["kernel/irq/manage.c"]),
    ("device model core", ["drivers/base/core.c"]),
    ("kobject", ["lib/kobject.c", "include/linux/kobject.h", "Documentation/core-api/kobject.rst"]),
    ("mutex implementation", ["kernel/locking/mutex.c"]),
    ("dentry cache", ["fs/dcache.c"]),
    ("socket buffer sk_buff", ["net/core/skbuff.c", "include/linux/skbuff.h"]),
    ("softirq", ["kernel/softirq.c"]),
    ("same page merging ksm", ["mm/ksm.c", "Documentation/admin-guide/mm/ksm.rst"]),
    ("soft lockup watchdog", ["kernel/watchdog.c"]),
    ("memory compaction", ["mm/compaction.c"]),
    ("page reclaim", ["mm/vmscan.c"]),
]
DEPTH = 20  # results asked for: an answer further down counts as none


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--home", required=True, help="the GNO_HOME scale.py --home keeps, the kernel tree indexed")
    ap.add_argument("--per-query", action="store_true", help="print each question's first answer's rank")
    args = ap.parse_args()
    rr, top10 = [], []
    with Daemon(home=os.path.abspath(args.home)) as d:
        for question, answers in JUDGED:
            hits = d.call("search", {"query": question, "limit": DEPTH, "snippets": False})["hits"]
            rank = next((i for i, h in enumerate(hits, 1) if h["path"] in answers), None)
            rr.append(1 / rank if rank else 0.0)
            top10.append(1.0 if rank and rank <= 10 else 0.0)
            if args.per_query:
                print(f"# {rank or '-':>3}  {question}")
    emit(mrr_at_20=statistics.mean(rr), hits_at_10=statistics.mean(top10), queries=len(JUDGED))


if __name__ == "__main__":
    main()

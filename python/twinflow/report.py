"""What explain(), memory() and simulate() return: plain fields, and a table when printed."""
import json


def _bytes(n):
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024.0


def _seconds(s):
    return f"{s * 1e3:.3f} ms" if s < 1 else f"{s:.3f} s"


def _table(header, rows):
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    line = lambda row: "  ".join(str(x).ljust(w) for x, w in zip(row, widths)).rstrip()
    return "\n".join([line(header)] + [line(r) for r in rows])


class Explanation:
    """The layouts the SBP search chose (`signatures`) and every resharding it costs
    (`boxings`: consumer, tensor, src, dst, steps, bytes, seconds)."""

    def __init__(self, data):
        self.signatures = data["signatures"]
        self.boxings = data["boxings"]
        self.compute_seconds = data["compute_seconds"]
        self.boxing_seconds = data["boxing_seconds"]
        self.exact = data["exact"]
        self.strategy = data["strategy"]

    def __str__(self):
        sig = _table(["op", "type", "placement", "signature"],
                     [(s["op"], s["type"], s["placement"], s["signature"]) for s in self.signatures])
        box = _table(["consumer op", "tensor", "from", "to", "steps", "bytes", "est. time"],
                     [(b["consumer"], b["tensor"], b["src"], b["dst"], "+".join(b["steps"]),
                       _bytes(b["bytes"]), _seconds(b["seconds"])) for b in self.boxings])
        return (f"signatures ({len(self.signatures)} ops):\n{sig}\n"
                f"boxings ({len(self.boxings)}):\n{box}\n"
                f"search: {'exact (optimal)' if self.exact else 'propagated'}; estimated compute "
                f"{_seconds(self.compute_seconds)} + boxing {_seconds(self.boxing_seconds)}")


class MemoryReport(list):
    """Per device of the compiled Plan: the arena the runtime allocates (what simulate() and
    `twinflow sim` report), its pipeline stage, the planned peak of live bytes and that peak
    split into `categories` (weights, gradients, optimizer state, activations, communication;
    they sum to peak_bytes). `optimizer` names the optimizer the graph trains with;
    `peak_bytes_per_device` is the largest arena."""

    CATEGORIES = ("weights", "gradients", "optimizer state", "activations", "communication")

    def __init__(self, data):
        super().__init__(data["devices"])
        self.optimizer = data["optimizer"]
        self.peak_bytes_per_device = max((d["arena_bytes"] for d in self), default=0)

    def __str__(self):
        rows = [(d["device"], d["stage"], _bytes(d["arena_bytes"]), _bytes(d["peak_bytes"]))
                + tuple(_bytes(d["categories"][c]) for c in self.CATEGORIES) for d in self]
        return (f"optimizer {self.optimizer}\n"
                + _table(["device", "stage", "arena", "planned peak"] + list(self.CATEGORIES),
                         rows))


class SimulationReport:
    """A simulated run: step time, samples/s, MFU, and per device busy, exposed
    communication, bubble, link utilisation and memory against capacity."""

    def __init__(self, data, samples_per_step, strategy):
        self._trace = data.pop("trace_json")
        self._perfetto = data.pop("trace_perfetto")
        self.__dict__.update(data)
        self.strategy = strategy
        self.samples_per_second = samples_per_step / data["step_s"] if data["step_s"] > 0 else 0.0
        self.out_of_memory = [d["device"] for d in self.devices if d["out_of_memory"]]
        self.peak_memory_bytes = max((d["arena_bytes"] for d in self.devices), default=0)

    @property
    def step_time(self):
        return self.step_s

    def to_chrome_trace(self, path):
        """Writes the Chrome trace (open it in Perfetto); simulate(trace=True) keeps it."""
        if not self._trace:
            raise ValueError("no trace kept: call simulate(..., trace=True)")
        with open(path, "w") as f:
            f.write(self._trace)

    def to_perfetto_trace(self, path):
        """Writes the trace in Perfetto's protobuf format (.pftrace), several times smaller than
        the Chrome JSON; simulate(trace=True) keeps it."""
        if not self._perfetto:
            raise ValueError("no trace kept: call simulate(..., trace=True)")
        with open(path, "wb") as f:
            f.write(self._perfetto)

    def to_dict(self):
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_")}

    def to_json(self):
        return json.dumps(self.to_dict(), indent=1, sort_keys=True)

    def __str__(self):
        total = self.total_s or 1.0
        shown = self.devices[:16]
        rows = [(d["device"], f"{100 * d['busy_s'] / total:.1f}%", f"{100 * d['exposed_comm_s'] / total:.1f}%",
                 f"{100 * d['bubble_s'] / total:.1f}%", _bytes(d["arena_bytes"]),
                 f"{100 * d['arena_bytes'] / self.memory_capacity:.1f}%" + (" OOM" if d["out_of_memory"] else ""))
                for d in shown]
        more = f"\n({len(self.devices) - len(shown)} more devices)" if len(self.devices) > len(shown) else ""
        return (f"simulated {self.strategy} on {self.cluster} x {self.nodes} nodes: step time "
                f"{_seconds(self.step_s)}, {self.samples_per_second:.1f} samples/s, MFU {100 * self.mfu:.1f}%\n"
                + _table(["device", "busy", "exposed comm", "bubble", "memory", "of capacity"], rows) + more)

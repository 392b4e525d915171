#!/usr/bin/env python3
"""Peer process of `fp8-check sweep --against ml_dtypes|torch` (tools/cli/sweep_peer_stream.cpp).

Writes the library's own FP8/E8M0 code for every input, in order, as raw bytes on stdout:
  exhaustive   inputs are the bit patterns 0 .. count-1 of the source type (f32, bf16, f16),
               built and cast in vectorised chunks;
  --stdin      inputs are little-endian f64 patterns read from stdin (sampled f64 sweeps), one
               chunk in, one chunk of codes out, until end of input.
The casts are the libraries' public ones: numpy `astype` for ml_dtypes, `Tensor.to` for torch.
--probe prints the library's version and exits 0, or 3 when it cannot be imported.
"""

import argparse
import sys

FORMATS = {"e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2", "e8m0": "float8_e8m0fnu"}
SOURCE_BITS = {"f32": 32, "bf16": 16, "f16": 16, "f64": 64}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lib", choices=["ml_dtypes", "torch"], required=True)
    p.add_argument("--probe", action="store_true", help="print the library version and exit")
    p.add_argument("--format", choices=sorted(FORMATS))
    p.add_argument("--from", dest="source", choices=sorted(SOURCE_BITS))
    p.add_argument("--count", type=int, help="number of inputs (default: all patterns)")
    p.add_argument("--chunk", type=int, default=1 << 24, help="inputs per vectorised cast")
    p.add_argument("--device", default="cpu", help="torch device (cpu, cuda)")
    p.add_argument("--stdin", action="store_true", help="read f64 inputs from stdin")
    args = p.parse_args()
    if not args.probe and (args.format is None or args.source is None):
        p.error("--format and --from are required")
    return args


def probe(lib):
    try:
        if lib == "ml_dtypes":
            import ml_dtypes
            import numpy as np

            print(f"ml_dtypes {ml_dtypes.__version__} (numpy {np.__version__})")
        else:
            import torch

            cuda = torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU"
            print(f"torch {torch.__version__} ({cuda})")
    except ImportError as e:
        print(f"cannot import {lib}: {e}", file=sys.stderr)
        return 3
    return 0


def ranges(count, chunk):
    for lo in range(0, count, chunk):
        yield lo, min(count, lo + chunk)


class MlDtypesCaster:
    def __init__(self, fmt, source):
        import ml_dtypes
        import numpy as np

        self.np = np
        self.target = getattr(ml_dtypes, FORMATS[fmt])
        self.view = {"f32": (np.uint32, np.float32), "bf16": (np.uint16, ml_dtypes.bfloat16),
                     "f16": (np.uint16, np.float16), "f64": (np.uint64, np.float64)}[source]
        self.base = None  # 0 .. chunk-1, reused: pattern lo + k = base[k] + lo

    def cast_patterns(self, lo, hi):
        np = self.np
        uint, flt = self.view
        n = hi - lo
        if self.base is None or len(self.base) < n:
            self.base = np.arange(0, n, dtype=uint)
            self.buf = np.empty(n, dtype=uint)
        x = self.buf[:n]
        np.add(self.base[:n], uint(lo), out=x)
        return self.cast(x.view(flt))

    def cast(self, x):
        with self.np.errstate(all="ignore"):
            return x.astype(self.target).view(self.np.uint8)

    def from_f64_bytes(self, buf):
        return self.cast(self.np.frombuffer(buf, dtype="<f8"))


class TorchCaster:
    def __init__(self, fmt, source, device):
        import torch

        self.torch = torch
        self.device = torch.device(device)
        self.target = getattr(torch, FORMATS[fmt])
        self.view = {"f32": (torch.int32, torch.float32), "bf16": (torch.int16, torch.bfloat16),
                     "f16": (torch.int16, torch.float16), "f64": (torch.int64, torch.float64)}[source]
        self.bits = SOURCE_BITS[source]

    def cast_patterns(self, lo, hi):
        torch = self.torch
        sint, flt = self.view
        # Patterns lo..hi-1 built on the device as int64, wrapped into the signed range of the
        # source width (so the narrowing .to() is exact), then reinterpreted as floats.
        x = torch.arange(lo, hi, dtype=torch.int64, device=self.device)
        half = 1 << (self.bits - 1)
        x = torch.where(x >= half, x - (1 << self.bits), x).to(sint).view(flt)
        return self.cast(x)

    def cast(self, x):
        return x.to(self.target).view(self.torch.uint8).cpu().numpy()

    def from_f64_bytes(self, buf):
        import numpy as np

        x = self.torch.from_numpy(np.frombuffer(buf, dtype="<f8").copy()).to(self.device)
        return self.cast(x)


def main():
    args = parse_args()
    if args.probe:
        return probe(args.lib)
    if args.lib == "ml_dtypes":
        caster = MlDtypesCaster(args.format, args.source)
    else:
        caster = TorchCaster(args.format, args.source, args.device)
    out = sys.stdout.buffer
    if args.stdin:
        inp = sys.stdin.buffer
        while True:
            buf = inp.read(args.chunk * 8)
            if not buf:
                break
            if len(buf) % 8:
                print("cast_stream: stdin ended inside an f64", file=sys.stderr)
                return 2
            out.write(caster.from_f64_bytes(buf).tobytes())
            out.flush()  # the sweep waits for this chunk before it sends the next
        return 0
    if args.source == "f64":
        print("cast_stream: f64 inputs come from --stdin", file=sys.stderr)
        return 2
    count = args.count if args.count is not None else 1 << SOURCE_BITS[args.source]
    for lo, hi in ranges(count, args.chunk):
        out.write(caster.cast_patterns(lo, hi).tobytes())
    out.flush()
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # the sweep stopped reading (it failed or was interrupted)
        sys.exit(1)

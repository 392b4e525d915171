#!/usr/bin/env python3
"""Generates the malformed-input corpus for tools/tensor_io (docs/design.md §16): every file must
make `fp8-check inspect` exit 2 with exactly one line on stderr. Stdlib only, deterministic output.
Usage: make_corpus.py OUT_DIR            (writes OUT_DIR/{safetensors,npy,npz,torch}/* + MANIFEST.txt)
       make_corpus.py --valid OUT_DIR    (well-formed seed files for the libFuzzer harnesses)"""
import io
import json
import os
import struct
import sys
import zipfile
import zlib


def st(header, payload=b"", raw_len=None):
    h = header if isinstance(header, bytes) else json.dumps(header).encode()
    n = len(h) if raw_len is None else raw_len
    return struct.pack("<Q", n) + h + payload


def ent(dtype, shape, begin, end):
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}


def safetensors_cases():
    ok = {"a": ent("F32", [2], 0, 8)}
    c = {
        "empty_file": b"", "short_len": b"\x10\x00\x00", "len_only": struct.pack("<Q", 2),
        "len_huge": struct.pack("<Q", 2**63) + b"{}", "len_all_ones": b"\xff" * 8 + b"{}",
        "len_past_eof": st(b"{}", raw_len=4096), "len_over_100mb": st(b"{}", raw_len=100_000_001),
        "json_truncated": st(b'{"a": {"dtype"'), "json_garbage": st(b"{not json}"),
        "json_array": st(b"[1,2,3]"), "json_string": st(b'"x"'), "json_nul": st(b'{"a"\x00: 1}'),
        "json_trailing": st(b'{"a": 1} {'), "json_deep": st(b"[" * 5000 + b"]" * 5000),
        "entry_not_object": st({"a": 5}), "no_dtype": st({"a": {"shape": [1], "data_offsets": [0, 4]}}),
        "no_shape": st({"a": {"dtype": "F32", "data_offsets": [0, 4]}}),
        "no_offsets": st({"a": {"dtype": "F32", "shape": [1]}}),
        "dtype_unknown": st({"a": ent("F128", [1], 0, 16)}, b"\0" * 16),
        "dtype_lowercase": st({"a": ent("f32", [1], 0, 4)}, b"\0" * 4),
        "dtype_number": st({"a": {"dtype": 7, "shape": [1], "data_offsets": [0, 1]}}, b"\0"),
        "shape_negative": st({"a": ent("F32", [-1], 0, 4)}, b"\0" * 4),
        "shape_float": st({"a": ent("F32", [1.5], 0, 4)}, b"\0" * 4),
        "shape_string": st({"a": ent("F32", ["2"], 0, 8)}, b"\0" * 8),
        "shape_not_list": st({"a": ent("F32", 2, 0, 8)}, b"\0" * 8),
        "shape_overflow_2x": st({"a": ent("U8", [2**32, 2**32], 0, 0)}),
        "shape_overflow_3x": st({"a": ent("F64", [2**21, 2**21, 2**21], 0, 8)}, b"\0" * 8),
        "shape_u64_max": st({"a": ent("U8", [2**64 - 1], 0, 1)}, b"\0"),
        "shape_bigger_than_span": st({"a": ent("F32", [3], 0, 8)}, b"\0" * 8),
        "shape_smaller_than_span": st({"a": ent("F32", [1], 0, 8)}, b"\0" * 8),
        "f4_odd_span": st({"a": ent("F4", [3], 0, 1)}, b"\0"),
        "bf16_half_elem": st({"a": ent("BF16", [1], 0, 1)}, b"\0"),
        "offset_past_end": st({"a": ent("F32", [2], 0, 8)}, b"\0" * 4),
        "offset_begin_gt_end": st({"a": ent("U8", [0], 8, 4)}, b"\0" * 8),
        "offset_huge": st({"a": ent("U8", [4], 2**64 - 2, 2**64 + 2)}, b"\0" * 4),
        "offset_negative": st({"a": ent("U8", [4], -4, 0)}, b"\0" * 4),
        "offset_three": st({"a": {"dtype": "U8", "shape": [4], "data_offsets": [0, 2, 4]}}, b"\0" * 4),
        "offset_not_list": st({"a": {"dtype": "U8", "shape": [4], "data_offsets": 4}}, b"\0" * 4),
        "overlap_partial": st({"a": ent("U8", [4], 0, 4), "b": ent("U8", [4], 2, 6)}, b"\0" * 8),
        "overlap_identical": st({"a": ent("U8", [4], 0, 4), "b": ent("U8", [4], 0, 4)}, b"\0" * 4),
        "overlap_contained": st({"a": ent("U8", [8], 0, 8), "b": ent("U8", [2], 3, 5)}, b"\0" * 8),
        "metadata_not_object": st({"__metadata__": [1], **ok}, b"\0" * 8),
        "metadata_int_value": st({"__metadata__": {"k": 1}, **ok}, b"\0" * 8),
        "truncated_payload": st({"a": ent("F64", [16], 0, 128)}, b"\0" * 100),
        "not_safetensors_text": b"hello world, this is plain text\n",
    }
    return c


def npy(dict_text, data=b"", major=1, magic=b"\x93NUMPY"):
    h = dict_text.encode()
    return magic + bytes([major, 0]) + struct.pack("<H" if major == 1 else "<I", len(h)) + h + data


def hdr(descr="'<f4'", fortran="False", shape="(2,)"):
    return "{'descr': %s, 'fortran_order': %s, 'shape': %s, }\n" % (descr, fortran, shape)


def npy_cases():
    return {
        "bad_magic": npy(hdr(), b"\0" * 8, magic=b"\x93NUMPX"), "magic_only": b"\x93NUMPY",
        "version_0": npy(hdr(), b"\0" * 8, major=0), "version_4": npy(hdr(), b"\0" * 8, major=4),
        "header_len_past_eof": b"\x93NUMPY\x01\x00\xff\xff{", "header_len_v2_huge": b"\x93NUMPY\x02\x00\xff\xff\xff\xff{",
        "header_not_dict": npy("['descr']\n"), "header_unterminated": npy("{'descr': '<f4\n"),
        "header_missing_shape": npy("{'descr': '<f4', 'fortran_order': False}\n"),
        "header_missing_descr": npy("{'fortran_order': False, 'shape': (2,)}\n", b"\0" * 8),
        "header_unknown_key": npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}\n", b"\0" * 8),
        "fortran_not_bool": npy(hdr(fortran="1"), b"\0" * 8),
        "shape_negative": npy(hdr(shape="(-1,)")), "shape_float": npy(hdr(shape="(2.0,)"), b"\0" * 8),
        "shape_not_tuple": npy(hdr(shape="[2]"), b"\0" * 8), "shape_overflow": npy(hdr(shape="(4294967296, 4294967296)")),
        "shape_overflow_3d": npy(hdr(shape="(2097152, 2097152, 2097152)")),
        "shape_huge_digit": npy(hdr(shape="(99999999999999999999999,)")), "shape_too_many_dims": npy(hdr(shape="(" + "1, " * 70 + ")"), b"\0" * 4),
        "descr_complex": npy(hdr("'<c8'"), b"\0" * 16), "descr_object": npy(hdr("'|O'"), b"\0" * 16),
        "descr_unicode": npy(hdr("'<U4'"), b"\0" * 32), "descr_datetime": npy(hdr("'<M8[ns]'"), b"\0" * 16),
        "descr_structured": npy(hdr("[('a', '<f4')]"), b"\0" * 8), "descr_empty": npy(hdr("''")),
        "descr_f3": npy(hdr("'<f3'"), b"\0" * 6), "descr_void_too_wide": npy(hdr("'|V16'"), b"\0" * 32),
        "opaque_v1_without_as": npy(hdr("'<V1'"), b"\0" * 2), "f1_data_short": npy(hdr("'<f1'"), b"\0"),
        "opaque_v2_without_as": npy(hdr("'<V2'"), b"\0" * 4),
        "data_short": npy(hdr(), b"\0" * 7), "data_long": npy(hdr(), b"\0" * 9), "data_missing": npy(hdr()),
        "zero_d_short": npy(hdr(shape="()"), b"\0\0"),
    }


def zip_bytes(members, compress=zipfile.ZIP_STORED):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compress) as z:
        for name, data in members:
            z.writestr(name, data)
    return buf.getvalue()


def good_npy():
    return npy(hdr(shape="(2,)").ljust(118) + "\n", b"\0" * 8)


def patch_central(blob, field_offset, fmt, value):
    """Overwrites a field of the first central-directory entry."""
    cd = blob.index(b"PK\x01\x02")
    return blob[:cd + field_offset] + struct.pack(fmt, value) + blob[cd + field_offset + struct.calcsize(fmt):]


def npz_cases():
    good = zip_bytes([("a.npy", good_npy())])
    bomb = zip_bytes([("a.npy", good_npy() + b"\0" * 60000)], zipfile.ZIP_DEFLATED)
    eocd = good.rindex(b"PK\x05\x06")
    return {
        "eocd_claims_entry": b"PK\x05\x06" + b"\0" * 4 + struct.pack("<HHII", 1, 1, 46, 0) + b"\0\0", "truncated_half": good[: len(good) // 2],
        "no_eocd": good[:eocd], "eocd_bad_cd_offset": good[:eocd + 16] + struct.pack("<I", 10**6) + good[eocd + 20:],
        "eocd_bad_count": good[:eocd + 8] + struct.pack("<HH", 999, 999) + good[eocd + 12:],
        "eocd_multidisk": good[:eocd + 8] + struct.pack("<HH", 1, 2) + good[eocd + 12:],
        "bomb_claims_4gb": patch_central(bomb, 24, "<I", 0xFFFFFFF0),
        "bomb_ratio": patch_central(bomb, 24, "<I", 60000 * 2000),
        "size_lie_short": patch_central(bomb, 24, "<I", 1000),
        "bad_crc": patch_central(good, 16, "<I", 0xDEADBEEF),
        "method_bzip2": patch_central(good, 10, "<H", 12), "encrypted_flag": patch_central(good, 8, "<H", 1),
        "local_offset_past_eof": patch_central(good, 42, "<I", 10**6),
        "stored_size_mismatch": patch_central(good, 20, "<I", 3),
        "zip64_without_extra": patch_central(good, 24, "<I", 0xFFFFFFFF),
        "member_not_npy": zip_bytes([("a.txt", b"hello")]),
        "member_bad_npy": zip_bytes([("a.npy", b"\x93NUMPY\x01\x00\x05\x00{'x'}")]),
        "member_opaque": zip_bytes([("a.npy", npy(hdr("'<V1'"), b"\0\0"))]),
        "duplicate_names": zip_bytes([("a.npy", good_npy()), ("b.npy", good_npy())]).replace(b"b.npy", b"a.npy"),
        "deflate_garbage": patch_central(zip_bytes([("a.npy", good_npy())], zipfile.ZIP_DEFLATED), 10, "<H", 8)[:40] + b"\xff" * 64 + good[eocd:],
    }


def pk(body):
    return b"\x80\x02" + body + b"."


def glob(m, n):
    return b"c" + m + b"\n" + n + b"\n"


def s(x):
    return b"X" + struct.pack("<I", len(x)) + x


def rebuild(storage_type=b"FloatStorage", key=b"0", numel=4, offset=0, size=(4,), stride=(1,)):
    ints = lambda xs: b"(" + b"".join(b"J" + struct.pack("<i", x) for x in xs) + b"t"
    pid = b"(" + s(b"storage") + glob(b"torch", storage_type) + s(key) + s(b"cpu") + b"J" + struct.pack("<i", numel) + b"tQ"
    return (glob(b"torch._utils", b"_rebuild_tensor_v2") + b"(" + pid + b"J" + struct.pack("<i", offset) + ints(size) +
            ints(stride) + b"\x89" + glob(b"collections", b"OrderedDict") + b")Rt" + b"R")


def torch_zip(pkl, storages=((b"0", b"\0" * 16),)):
    members = [("archive/data.pkl", pkl), ("archive/byteorder", b"little")]
    members += [("archive/data/" + k.decode(), v) for k, v in storages]
    return zip_bytes(members)


def torch_cases():
    legacy = b"\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19.\x80\x02}q\x00."
    tar = b"\0" * 257 + b"ustar\x0000" + b"\0" * 250
    c = {
        "legacy_pickle_magic": legacy, "legacy_tar": tar, "bare_pickle": pk(b"}"),
        "global_os_system": torch_zip(pk(glob(b"os", b"system") + s(b"true") + b"\x85R")),
        "global_builtins_eval": torch_zip(pk(glob(b"builtins", b"eval") + s(b"1") + b"\x85R")),
        "global_numpy_reconstruct": torch_zip(pk(glob(b"numpy.core.multiarray", b"_reconstruct"))),
        "global_torch_load": torch_zip(pk(glob(b"torch", b"load"))),
        "stack_global_subprocess": torch_zip(pk(s(b"subprocess") + s(b"Popen") + b"\x93")),
        "reduce_storage_type": torch_zip(pk(glob(b"torch", b"FloatStorage") + b")R")),
        "reduce_non_global": torch_zip(pk(b"})R")),
        "op_inst": torch_zip(pk(b"(i__builtin__\nobject\n")), "op_obj": torch_zip(pk(b"(o")),
        "op_newobj": torch_zip(pk(glob(b"collections", b"OrderedDict") + b")\x81")),
        "op_ext1": torch_zip(pk(b"\x82\x01")), "op_persid_text": torch_zip(pk(b"P0\n")),
        "op_int_text": torch_zip(pk(b"I1\n")), "op_get_text": torch_zip(pk(b"g0\n")),
        "op_empty_set": torch_zip(pk(b"\x8f")), "op_bytearray8": torch_zip(pk(b"\x96" + b"\0" * 8)),
        "op_unknown_ff": torch_zip(pk(b"\xff")), "proto_9": torch_zip(b"\x80\x09}."),
        "stack_underflow": torch_zip(pk(b"t")), "mark_missing": torch_zip(pk(b"]e")),
        "memo_missing": torch_zip(pk(b"h\x05")), "no_stop": torch_zip(b"\x80\x02}"),
        "two_results": torch_zip(pk(b"}}")), "long1_too_wide": torch_zip(pk(b"\x8a\x10" + b"\0" * 16)),
        "string_past_end": torch_zip(pk(b"X\xff\xff\xff\x7fabc")),
        "setitems_odd": torch_zip(pk(b"}(Ju\0\0\0u")), "append_to_dict": torch_zip(pk(b"}Na")),
        "build_on_tensor": torch_zip(pk(rebuild() + b"}b")),
        "persid_short_tuple": torch_zip(pk(b"(" + s(b"storage") + b"tQ")),
        "persid_bad_type": torch_zip(pk(b"(" + s(b"storage") + glob(b"collections", b"OrderedDict") + s(b"0") + s(b"cpu") + b"K\x04tQ")),
        "storage_missing": torch_zip(pk(rebuild(key=b"7"))),
        "storage_too_small": torch_zip(pk(rebuild(numel=8))),
        "view_past_storage": torch_zip(pk(rebuild(offset=2))),
        "view_stride_past": torch_zip(pk(rebuild(size=(2, 2), stride=(3, 1)))),
        "view_negative_stride": torch_zip(pk(rebuild(size=(4,), stride=(-1,)))),
        "view_negative_offset": torch_zip(pk(rebuild(offset=-1))),
        "view_size_stride_len": torch_zip(pk(rebuild(size=(2, 2), stride=(2,)))),
        "rebuild_few_args": torch_zip(pk(glob(b"torch._utils", b"_rebuild_tensor_v2") + b")R")),
        "bare_storage": torch_zip(pk(b"(" + s(b"storage") + glob(b"torch", b"FloatStorage") + s(b"0") + s(b"cpu") + b"K\x04tQ")),
        "cyclic_list": torch_zip(pk(b"]q\x00h\x00a")),
        "dict_key_tuple": torch_zip(pk(b"})" + rebuild() + b"s")),
        "byteorder_big": zip_bytes([("archive/data.pkl", pk(b"}")), ("archive/byteorder", b"big")]),
        "duplicate_names": torch_zip(pk(b"}(" + s(b"a.b") + rebuild() + s(b"a") + b"}(" + s(b"b") + rebuild() + b"uu")),
        "global_name_too_long": torch_zip(pk(b"c" + b"a" * 400 + b"\nb\n")),
    }
    return c


def valid_seeds():
    f32 = struct.pack("<4f", 1, 2, 3, 4)
    return {
        "safetensors/valid.safetensors": st({"__metadata__": {"k": "v"}, "a": ent("F32", [2, 2], 0, 16), "b": ent("F8_E4M3", [3], 16, 19)}, f32 + b"\x38\x7e\x01"),
        "npy/valid_v1.npy": good_npy(), "npy/valid_fortran.npy": npy(hdr("'>i2'", "True", "(2, 2)"), b"\0\1\0\2\0\3\0\4"),
        "npz/valid_stored.npz": zip_bytes([("a.npy", good_npy())]),
        "npz/valid_deflated.npz": zip_bytes([("a.npy", good_npy()), ("b.npy", good_npy())], zipfile.ZIP_DEFLATED),
        "torch/valid.pt": torch_zip(pk(b"}(" + s(b"w") + rebuild() + s(b"t") + rebuild(size=(2, 2), stride=(1, 2)) + b"u"), ((b"0", f32),)),
    }


def write(out_dir, files, manifest):
    for rel, data in sorted(files.items()):
        path = os.path.join(out_dir, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
        if manifest is not None:
            manifest.append(rel)


def main(argv):
    if len(argv) == 3 and argv[1] == "--valid":
        write(argv[2], valid_seeds(), None)
        return 0
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    files = {}
    for kind, ext, cases in (("safetensors", "safetensors", safetensors_cases()), ("npy", "npy", npy_cases()),
                             ("npz", "npz", npz_cases()), ("torch", "pt", torch_cases())):
        for name, data in cases.items():
            files[f"{kind}/{name}.{ext}"] = data
    manifest = []
    write(argv[1], files, manifest)
    with open(os.path.join(argv[1], "MANIFEST.txt"), "w") as f:
        f.write("\n".join(manifest) + "\n")
    print(f"{len(manifest)} files, {sum(len(v) for v in files.values())} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

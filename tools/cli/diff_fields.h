// The fields of diff's report structs (diff.h), each listed once: `fp8-check diff --json`
// (diff.cpp, schema fp8ref.diff/1) and the Python module's DiffReport (python/src/
// tensor_bindings.cpp, docs/python.md §3) are both written by visiting these lists, so a field
// added here appears in both. visit_fields(x, v) calls v(name, value, shown) once per field, in
// the JSON's order; `name` is the field's name (the Python key), `shown` says how the JSON writes
// it where that differs (fp8ref.diff/1 predates the Python API and keeps its spelling).
#pragma once

#include <string>

#include "cli/diff.h"
#include "tensor_io/tensor.h"

namespace fp8ref::cli {

// How fp8ref.diff/1 writes a field.
struct Shown {
  enum Kind {
    value,         // as is; a double as a number, or "nan" / "inf" / "-inf"
    text,          // a name, escaped by tensor_io::json_text
    hex_bits,      // a bit pattern as "0x…", as many digits as the tensor's dtype has
    ulp_or_class,  // an ULP distance, or "class" when negative (NaN / Inf classes differ)
    bound_metric,  // only under --metric bound
    python_only,   // not in the JSON (derived from other fields)
  };
  Kind kind = value;
  const char* json = nullptr;  // the JSON key, when it is not the field's name
};

template <class V>
void visit_fields(const GroupStats& g, V&& v) {
  v("group", g.group, Shown{});
  v("rows", g.rows, Shown{});
  v("elements", g.elements, Shown{});
  v("mismatches", g.mismatches, Shown{});
  v("metric_failures", g.metric_failures, Shown{});
  v("max_ulp", g.max_ulp, Shown{});
  v("max_abs", g.max_abs, Shown{});
}

template <class V>
void visit_fields(const Mismatch& m, V&& v) {
  v("multi_index", m.multi_index, Shown{Shown::value, "index"});
  v("index", m.index, Shown{Shown::value, "flat"});
  v("group", m.group, Shown{});
  v("a_bits", m.a_bits, Shown{Shown::hex_bits, "a_hex"});
  v("b_bits", m.b_bits, Shown{Shown::hex_bits, "b_hex"});
  v("a", m.a, Shown{});
  v("b", m.b, Shown{});
  v("ulp", m.ulp, Shown{Shown::ulp_or_class});
  v("bound", m.bound, Shown{Shown::bound_metric});
}

// The heatmap is neither in the JSON nor in Python (it feeds the --html report only).
template <class V>
void visit_fields(const TensorDiff& d, V&& v) {
  v("name", d.name, Shown{Shown::text});
  v("status", std::string(to_string(d.status)), Shown{});
  v("passes", d.passes(), Shown{Shown::python_only});
  v("dtype", std::string(tensor_io::dtype_name(d.dtype)), Shown{});
  v("shape", d.shape, Shown{});
  v("numel", d.numel, Shown{});
  v("bitwise_mismatches", d.bitwise_mismatches, Shown{});
  v("class_mismatches", d.class_mismatches, Shown{});
  v("metric_failures", d.metric_failures, Shown{});
  v("max_ulp", d.max_ulp, Shown{});
  v("max_abs", d.max_abs, Shown{});
  v("max_rel", d.max_rel, Shown{});
  v("rel_l2", d.rel_l2, Shown{});
  v("sqnr_db", d.sqnr_db, Shown{});
  v("max_bound_ratio", d.max_bound_ratio, Shown{Shown::bound_metric});
  v("ulp_hist", d.ulp_hist, Shown{Shown::value, "ulp_histogram"});
  v("first", d.first, Shown{Shown::value, "first_mismatches"});
  v("groups", d.groups, Shown{});
}

}  // namespace fp8ref::cli

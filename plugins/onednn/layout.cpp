#include "layout.hpp"

#include <algorithm>
#include <functional>

namespace onednn {

dnnl::memory::dims batch_dims(int64_t n, const Shape& shape) {
  if (is_image(shape)) return {n, shape[2], shape[0], shape[1]};
  dnnl::memory::dims dims{n};
  dims.insert(dims.end(), shape.begin(), shape.end());
  return dims;
}

dnnl::memory::dims row_major_strides(const dnnl::memory::dims& dims) {
  dnnl::memory::dims strides(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * dims[i + 1];
  return strides;
}

md canonical_md(int64_t n, const Shape& shape, dt type) {
  if (is_image(shape)) return md(batch_dims(n, shape), type, tag::nhwc);
  const auto dims = batch_dims(n, shape);
  return md(dims, type, row_major_strides(dims));
}

namespace {

// Each axis's stride in a plain or whole-blocked layout, or false. A layout blocked once by the whole of one dim
// (nChw16c with 16 channels) is that dim innermost: a plain layout in all but name, and the commonest one a
// convolution picks for a 16-channel map.
bool plain_strides(const md& m, dnnl::memory::dims& strides) {
  const dnnl_memory_desc_t& d = m.data;
  if (d.format_kind != dnnl_blocked || d.offset0 != 0) return false;
  const dnnl_blocking_desc_t& blocking = d.format_desc.blocking;
  int whole_block = -1;
  if (blocking.inner_nblks == 1) {
    whole_block = static_cast<int>(blocking.inner_idxs[0]);
    if (blocking.inner_blks[0] != d.dims[whole_block]) return false;
  } else if (blocking.inner_nblks != 0) {
    return false;
  }
  strides.assign(static_cast<size_t>(d.ndims), 0);
  for (int i = 0; i < d.ndims; ++i) {
    if (d.padded_dims[i] != d.dims[i]) return false;
    strides[static_cast<size_t>(i)] = i == whole_block ? 1 : blocking.strides[i];
  }
  return true;
}

bool dense(const md& m) {
  int64_t count = 1;
  for (int64_t d : m.dims()) count *= d;
  return static_cast<size_t>(count) * dnnl::memory::data_type_size(m.data_type()) == m.get_size();
}

}  // namespace

bool same_bytes(const md& a, const md& b) {
  if (a.data_type() != b.data_type() || a.get_size() != b.get_size()) return false;
  using Axis = std::pair<int64_t, int64_t>;  // (stride, extent)
  auto axes = [](const md& m, std::vector<Axis>& out) {
    dnnl::memory::dims strides;
    if (!plain_strides(m, strides)) return false;
    const dnnl::memory::dims dims = m.dims();
    for (size_t i = 0; i < dims.size(); ++i)
      if (dims[i] != 1) out.emplace_back(strides[i], dims[i]);
    std::sort(out.begin(), out.end(), std::greater<>());
    return true;
  };
  std::vector<Axis> x, y;
  return axes(a, x) && axes(b, y) && x == y;
}

bool same_order(const md& a, const md& b) {
  if (a.dims() != b.dims() || !dense(a) || !dense(b)) return false;
  dnnl::memory::dims x, y;
  if (!plain_strides(a, x) || !plain_strides(b, y)) return false;
  const dnnl::memory::dims dims = a.dims();
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] != 1 && x[i] != y[i]) return false;
  return true;
}

md any_md(int64_t n, const Shape& shape, dt type) { return md(batch_dims(n, shape), type, tag::any); }

md with_type(const md& desc, dt type) {
  if (desc.data_type() == type) return desc;
  dnnl_memory_desc_t c = desc.data;
  c.data_type = dnnl::memory::convert_to_c(type);
  return md(c);
}

int last_axis(const Shape& shape) { return is_image(shape) ? 1 : static_cast<int>(shape.size()); }

md row_major_md(const Shape& shape, dt type) {
  const dnnl::memory::dims dims(shape.begin(), shape.end());
  return md(dims, type, row_major_strides(dims));
}

md hwio_kernel_md(int64_t kh, int64_t kw, int64_t C, int64_t F, int64_t G, dt type) {
  if (G == 1) return md({F, C, kh, kw}, type, {1, F, kw * C * F, C * F});
  return md({G, F / G, C / G, kh, kw}, type, {F / G, 1, F, kw * (C / G) * F, (C / G) * F});
}

}  // namespace onednn

#include "relayout.hpp"

#include "kernels.hpp"

namespace onednn {

Relayout::Relayout(const dnnl::memory& src, const dnnl::memory& dst, bool accumulate) : src_(src), dst_(dst) {
  if (src.get_desc() == dst.get_desc()) {
    kind_ = accumulate ? Kind::add : Kind::copy;
    return;
  }
  dnnl::primitive_attr attr;
  if (accumulate) {
    dnnl::post_ops ops;
    ops.append_sum(1.0f);
    attr.set_post_ops(ops);
  }
  reorder_ = dnnl::reorder(dnnl::reorder::primitive_desc(src.get_engine(), src.get_desc(), dst.get_engine(),
                                                         dst.get_desc(), attr));
  args_ = {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, dst}};
  kind_ = Kind::reorder;
}

void Relayout::run(const Exec& exec) const {
  switch (kind_) {
    case Kind::none: return;
    case Kind::copy: copy_memory(dst_, src_); return;
    case Kind::add: add_memory(dst_, src_); return;
    case Kind::reorder: exec.run(reorder_, args_); return;
  }
}

}  // namespace onednn

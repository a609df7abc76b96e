// How a large gradient is cut into pieces of whole rows (along its first dimension) for all-reducing while backward
// still runs (ramjet_backward_args.grad_rows_ready). The host plans its pieces by this rule and a backend that
// computes a gradient in row blocks cuts its blocks by the same rule, so that each block it finishes completes one
// of the host's pieces: a 32 MiB dense-layer kernel goes out in two halves as backward produces them instead of in
// one message after the whole matrix is done.
#ifndef RAMJET_SDK_GRADIENT_PIECES_HPP
#define RAMJET_SDK_GRADIENT_PIECES_HPP

#include <cstdint>

namespace ramjet {

// Pieces are at most this size. Each piece is an all-reduce of its own, and each costs a fixed overhead besides its
// bytes: on 2 vCPUs with both ranks computing, a 46 MB MLP's step (docs/benchmarks.md, issue 11) left 4 ms of
// all-reduce after backward with 16 MiB pieces under Open MPI (11 ms unsplit) but more than unsplit with 4 or
// 8 MiB pieces under gloo, whose every extra call cost about 2 ms there.
inline constexpr int64_t kGradientPieceBytes = int64_t{16} << 20;

// The rows in each piece (the last piece may have fewer) of a gradient of `rows` rows of `row_bytes` bytes each:
// `rows` itself, one piece, when the gradient is no larger than a piece. The pieces are as even as whole rows allow.
inline int64_t gradient_piece_rows(int64_t rows, int64_t row_bytes) {
  if (rows <= 1 || row_bytes <= 0 || rows * row_bytes <= kGradientPieceBytes) return rows < 1 ? 1 : rows;
  const int64_t pieces = (rows * row_bytes + kGradientPieceBytes - 1) / kGradientPieceBytes;
  return (rows + pieces - 1) / pieces;
}

}  // namespace ramjet

#endif

//! The source texts' own numbers, quoted: every figure the book takes from another text is listed
//! here once, with what it measures and where it comes from. The ladder figure draws the B200 ones as
//! a reference series in a style of their own (hollow markers, dashed line, "quoted from" in the
//! legend), the book's `{{#ladder-quoted}}` prints the whole table, and `{{#ladder-quote ID}}` writes
//! one value into a chapter's text. None of these numbers were measured by this program.

/// A text the ladder follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Source {
    /// Short key used by the figures: `modular`, `gau-nernst`, ...
    pub key: &'static str,
    pub title: &'static str,
    pub authors: &'static str,
    /// Where it was published: every text the book follows has one, and the references page gives it.
    pub address: &'static str,
    /// The project's working copy, beside the repository (`../shared/seeds/…`, not distributed with
    /// it): a test checks the quoted numbers against it where it is present. Never shown in the book.
    pub seed: &'static str,
    /// The steps of this ladder it drives: `07, 08, 09, 10`, `11`.
    pub steps: &'static str,
}

pub const MODULAR_2: Source = Source {
    key: "modular",
    title: "Matrix Multiplication on Blackwell: Part 2 — Using Hardware Features to Optimize Matmul",
    authors: "Ali Taha, Jiexiang Liu, Hengjie Wang, Abdul Dakkak (Modular)",
    address: "https://www.modular.com/blog/matrix-multiplication-on-nvidias-blackwell-part-2-using-hardware-features-to-optimize-matmul",
    seed: "seeds/000_107d03c39102945c.txt",
    steps: "01, 04, 05, 06",
};

pub const MODULAR_3: Source = Source {
    key: "modular",
    title: "Matrix Multiplication on Blackwell: Part 3 — The Optimizations Behind 85% of SOTA Performance",
    authors: "Ali Taha, Jiexiang Liu, Hengjie Wang, Abdul Dakkak (Modular), 12 September 2025",
    address: "https://www.modular.com/blog/matrix-multiplication-on-nvidias-blackwell-part-3-the-optimizations-behind-85-of-sota-performance",
    seed: "seeds/001_61098de45252e38c.txt",
    steps: "07, 08, 09, 10",
};

pub const GAU_NERNST: Source = Source {
    key: "gau-nernst",
    title: "tcgen05 for dummies",
    authors: "Thien Tran (gau-nernst), 21 December 2025; code: github.com/gau-nernst/learn-cuda, 02e_matmul_sm100",
    address: "https://gau-nernst.github.io/tcgen05/",
    seed: "seeds/003_8ff71249f181e60e.txt",
    steps: "04 to 10",
};

pub const SGEMM_WORKLOG: Source = Source {
    key: "sgemm-worklog",
    title: "The GEMM Worklog, kernel 5: 2D block-tiling (after Simon Boehm's “How to Optimize a CUDA Matmul Kernel for cuBLAS-like Performance: a Worklog”, siboehm.com/articles/22/CUDA-MMM)",
    authors: "Vizuara Kernel Engineering, series “03 · The GEMM Worklog”",
    address: "https://kernelengineering.vizuara.ai/",
    seed: "seeds/002_74c07a44ca6ea61b.txt",
    steps: "02, 03",
};

pub const MXFP8: Source = Source {
    key: "mxfp8",
    title: "MXFP8 GEMM: Up to 99% of cuBLAS performance using CUDA + PTX",
    authors: "Daniel Vega-Myhre, 29 March 2026",
    address: "https://danielvegamyhre.github.io/2026/03/29/mxfp8-gemm.html",
    seed: "seeds/004_72fc731bf9e27c20.txt",
    steps: "11",
};

pub const FAST_CU: Source = Source {
    key: "fast.cu",
    title: "Outperforming cuBLAS on H100: a Worklog (code: github.com/pranjalssh/fast.cu)",
    authors: "Pranjal Shankhdhar",
    address: "https://cudaforfun.substack.com/p/outperforming-cublas-on-h100-a-worklog",
    seed: "",
    steps: "04 to 10 (their Hopper twins)",
};

pub const GAU_NERNST_SM80: Source = Source {
    key: "gau-nernst-sm80",
    title: "learn-cuda, 02b_matmul_sm80 (README): bf16 matmul with mma.sync on Ampere and consumer GPUs",
    authors: "Thien Tran (gau-nernst)",
    address: "https://github.com/gau-nernst/learn-cuda/tree/main/02b_matmul_sm80",
    seed: "",
    steps: "04 to 07 (their sm80 twins)",
};

/// Every source, in the order the references page lists them.
pub const SOURCES: &[&Source] = &[
    &MODULAR_2,
    &MODULAR_3,
    &GAU_NERNST,
    &SGEMM_WORKLOG,
    &FAST_CU,
    &MXFP8,
    &GAU_NERNST_SM80,
];

/// One quoted number.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Quoted {
    /// Stable id for `{{#ladder-quote ID}}`: `modular-k2`, `gau-v6`, ...
    pub id: &'static str,
    pub source: &'static Source,
    /// What the text calls it: `kernel 2`, `v6 (persistent w/ static scheduling)`, `cuBLAS`.
    pub what: &'static str,
    /// What it measures, in a few words.
    pub measures: &'static str,
    pub gpu: &'static str,
    /// `M=N=K=4096`.
    pub shape: &'static str,
    pub tflops: f64,
    /// The rung of this ladder that does what the quoted kernel does, where one does (the figure
    /// draws it there); `None` for references (cuBLAS) and kernels between two rungs.
    pub step: Option<u8>,
    /// How the number was obtained from the text when it is not printed there as it stands.
    pub derived: Option<&'static str>,
}

const B200_BF16: &str = "bf16 GEMM, fp32 accumulate, TFLOPS";

/// Every number the book quotes from another text.
pub const QUOTED: &[Quoted] = &[
    Quoted {
        id: "modular-k2",
        source: &MODULAR_2,
        what: "kernel 2 (TMA + tcgen05.mma + TMEM)",
        measures: B200_BF16,
        gpu: "B200",
        shape: "M=N=K=4096",
        tflops: 155.0,
        step: Some(4),
        derived: None,
    },
    Quoted {
        id: "modular-k3",
        source: &MODULAR_2,
        what: "kernel 3 (128-byte swizzle)",
        measures: B200_BF16,
        gpu: "B200",
        shape: "M=N=K=4096",
        tflops: 288.3,
        step: Some(5),
        derived: None,
    },
    Quoted {
        id: "modular-k4",
        source: &MODULAR_2,
        what: "kernel 4 (stmatrix + TMA store)",
        measures: B200_BF16,
        gpu: "B200",
        shape: "M=N=K=4096",
        tflops: 293.6,
        step: Some(6),
        derived: None,
    },
    Quoted {
        id: "modular-k5",
        source: &MODULAR_3,
        what: "kernel 5 (TMA multicast + 2-SM MMA)",
        measures: B200_BF16,
        gpu: "B200",
        shape: "M=N=K=4096",
        tflops: 360.2,
        step: Some(7),
        derived: None,
    },
    Quoted {
        id: "modular-k6",
        source: &MODULAR_3,
        what: "kernel 6 (warp-specialised 5-stage pipeline)",
        measures: B200_BF16,
        gpu: "B200",
        shape: "M=N=K=4096",
        tflops: 1429.0,
        step: Some(8),
        derived: None,
    },
    Quoted {
        id: "modular-k7",
        source: &MODULAR_3,
        what: "kernel 7 (double-buffered TMA-store epilogue)",
        measures: B200_BF16,
        gpu: "B200",
        shape: "M=N=K=4096",
        tflops: 1493.0,
        step: Some(9),
        derived: Some("kernel 6's 1429 plus the “additional 64 TFlops” the text gives (“85% of SOTA”)"),
    },
    Quoted {
        id: "gau-cublas",
        source: &GAU_NERNST,
        what: "cuBLAS (PyTorch 2.9.1 + CUDA 13)",
        measures: B200_BF16,
        gpu: "B200",
        shape: "M=N=K=4096",
        tflops: 1506.74,
        step: None,
        derived: None,
    },
    Quoted {
        id: "gau-v1a",
        source: &GAU_NERNST,
        what: "v1a (basic tcgen05 + 2D 16-byte TMA)",
        measures: B200_BF16,
        gpu: "B200",
        shape: "M=N=K=4096",
        tflops: 254.62,
        step: Some(4),
        derived: None,
    },
    Quoted {
        id: "gau-v1b",
        source: &GAU_NERNST,
        what: "v1b (3D 16-byte TMA)",
        measures: B200_BF16,
        gpu: "B200",
        shape: "M=N=K=4096",
        tflops: 252.81,
        step: None,
        derived: None,
    },
    Quoted {
        id: "gau-v2a",
        source: &GAU_NERNST,
        what: "v2a (2D 128-byte TMA)",
        measures: B200_BF16,
        gpu: "B200",
        shape: "M=N=K=4096",
        tflops: 681.20,
        step: None,
        derived: None,
    },
    Quoted {
        id: "gau-v2b",
        source: &GAU_NERNST,
        what: "v2b (3D 128-byte TMA)",
        measures: B200_BF16,
        gpu: "B200",
        shape: "M=N=K=4096",
        tflops: 695.43,
        step: Some(5),
        derived: None,
    },
    Quoted {
        id: "gau-v3",
        source: &GAU_NERNST,
        what: "v3 (pipelining)",
        measures: B200_BF16,
        gpu: "B200",
        shape: "M=N=K=4096",
        tflops: 939.61,
        step: None,
        derived: None,
    },
    Quoted {
        id: "gau-v4",
        source: &GAU_NERNST,
        what: "v4 (warp specialization)",
        measures: B200_BF16,
        gpu: "B200",
        shape: "M=N=K=4096",
        tflops: 1208.83,
        step: Some(8),
        derived: None,
    },
    Quoted {
        id: "gau-v5",
        source: &GAU_NERNST,
        what: "v5 (2-SM MMA)",
        measures: B200_BF16,
        gpu: "B200",
        shape: "M=N=K=4096",
        tflops: 1302.29,
        step: None,
        derived: None,
    },
    Quoted {
        id: "gau-v6",
        source: &GAU_NERNST,
        what: "v6 (persistent, static schedule, TMEM double buffer)",
        measures: B200_BF16,
        gpu: "B200",
        shape: "M=N=K=4096",
        tflops: 1475.93,
        step: Some(10),
        derived: None,
    },
    Quoted {
        id: "sgemm-k5",
        source: &SGEMM_WORKLOG,
        what: "kernel 5 (2D block tiling, 8×8 per thread), 68.7% of cuBLAS",
        measures: "fp32 SGEMM, TFLOPS",
        gpu: "H100",
        shape: "M=N=K=4096 (the worklog's size)",
        tflops: 15.972,
        step: None,
        derived: Some("“roughly 15,972 GFLOP/s”"),
    },
    Quoted {
        id: "mxfp8-4096",
        source: &MXFP8,
        what: "the final MXFP8 kernel (2-SM block-scaled tcgen05)",
        measures: "MXFP8 GEMM (e4m3, 1×32 e8m0 scales), fp32 out, TFLOPS",
        gpu: "B200",
        shape: "M=N=K=4096",
        tflops: 2200.29,
        step: Some(11),
        derived: None,
    },
    Quoted {
        id: "mxfp8-cublas-4096",
        source: &MXFP8,
        what: "torch._scaled_mm (cuBLAS)",
        measures: "MXFP8 GEMM, fp32 out, TFLOPS",
        gpu: "B200",
        shape: "M=N=K=4096",
        tflops: 2538.40,
        step: None,
        derived: None,
    },
    Quoted {
        id: "mxfp8-8192",
        source: &MXFP8,
        what: "the final MXFP8 kernel (2-SM block-scaled tcgen05)",
        measures: "MXFP8 GEMM (e4m3, 1×32 e8m0 scales), fp32 out, TFLOPS",
        gpu: "B200",
        shape: "M=N=K=8192",
        tflops: 2599.07,
        step: None,
        derived: None,
    },
    Quoted {
        id: "mxfp8-cublas-8192",
        source: &MXFP8,
        what: "torch._scaled_mm (cuBLAS)",
        measures: "MXFP8 GEMM, fp32 out, TFLOPS",
        gpu: "B200",
        shape: "M=N=K=8192",
        tflops: 2691.93,
        step: None,
        derived: None,
    },
    Quoted {
        id: "gau-sm80-a100-cublas",
        source: &GAU_NERNST_SM80,
        what: "cuBLAS",
        measures: "bf16 GEMM (A row-major, B column-major), TFLOPS",
        gpu: "A100 80GB PCIe",
        shape: "M=N=K=4096",
        tflops: 227.49,
        step: None,
        derived: None,
    },
    Quoted {
        id: "gau-sm80-a100-v7",
        source: &GAU_NERNST_SM80,
        what: "v7, the last of its mma.sync kernels (cp.async multistage, ldmatrix, swizzled shared memory)",
        measures: "bf16 GEMM (A row-major, B column-major), TFLOPS",
        gpu: "A100 80GB PCIe",
        shape: "M=N=K=4096",
        tflops: 166.73,
        step: None,
        derived: None,
    },
];

/// A quoted number by id.
pub fn get(id: &str) -> Option<&'static Quoted> {
    QUOTED.iter().find(|q| q.id == id)
}

/// The series the ladder figure draws: one per source, the B200 kernels placed at a rung, in step
/// order (the MXFP8 post's point, at step 11, is a series of its own: another author, another problem).
pub fn figure_series() -> Vec<(&'static str, String, Vec<&'static Quoted>)> {
    let mut out: Vec<(&'static str, String, Vec<&'static Quoted>)> = Vec::new();
    for q in QUOTED.iter().filter(|q| q.gpu == "B200" && q.step.is_some()) {
        let key = q.source.key;
        match out.iter_mut().find(|(k, _, _)| *k == key) {
            Some((_, _, points)) => points.push(q),
            None => {
                let label = match key {
                    "modular" => "B200, quoted: Modular, “Matmul on Blackwell” parts 2–3",
                    "gau-nernst" => "B200, quoted: gau-nernst, “tcgen05 for dummies”",
                    "mxfp8" => "B200, quoted: Vega-Myhre, “MXFP8 GEMM” (e4m3)",
                    other => other,
                };
                out.push((key, label.to_string(), vec![q]));
            }
        }
    }
    for (_, _, points) in out.iter_mut() {
        points.sort_by_key(|q| q.step);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn ids_are_unique_and_every_source_is_listed() {
        for source in SOURCES {
            assert!(
                source.address.starts_with("https://"),
                "{} has no address",
                source.title
            );
        }
        let ids: BTreeSet<&str> = QUOTED.iter().map(|q| q.id).collect();
        assert_eq!(ids.len(), QUOTED.len());
        for q in QUOTED {
            assert!(SOURCES.contains(&q.source), "{}", q.id);
            assert!(q.tflops > 0.0, "{}", q.id);
        }
        assert_eq!(get("gau-v6").unwrap().tflops, 1475.93);
    }

    #[test]
    fn the_figure_series_are_b200_rungs_in_step_order() {
        let series = figure_series();
        assert_eq!(series.len(), 3);
        for (_, label, points) in &series {
            assert!(label.starts_with("B200, quoted: "), "{label}");
            let steps: Vec<u8> = points.iter().filter_map(|q| q.step).collect();
            assert!(steps.windows(2).all(|w| w[0] < w[1]), "{label}: {steps:?}");
        }
    }
}

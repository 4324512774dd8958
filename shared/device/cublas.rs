//! cuBLAS, the yardstick: the same `C = A · Bᵀ` in bf16 (fp32 compute) and in fp32 (SGEMM).
//!
//! cuBLAS is column-major. Our row-major M×N `C` is, read column-major, the N×M matrix `Cᵀ = B · Aᵀ`;
//! row-major `B` (N×K) read column-major is `Bᵀ` (K×N), so it enters transposed, and row-major `A`
//! read column-major is already `Aᵀ`. Hence `gemm(T, N, n, m, k, B, A, C)`, the "TN" case cuBLAS
//! serves best.

use crate::device::libs;
use crate::error::{Error, Result};
use crate::shape::Shape;
use cudarc::cublas::sys::{self, cublasComputeType_t, cublasGemmAlgo_t, cublasOperation_t, cudaDataType};
use cudarc::cublas::CudaBlas;
use cudarc::driver::CudaStream;
use std::ffi::c_void;
use std::sync::Arc;

pub struct Cublas {
    blas: CudaBlas,
}

fn check(status: sys::cublasStatus_t, what: &str) -> Result<()> {
    if status == sys::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
        Ok(())
    } else {
        Err(Error::Cuda {
            context: what.to_string(),
            detail: format!("{status:?}"),
        })
    }
}

impl Cublas {
    pub fn new(stream: Arc<CudaStream>) -> Result<Cublas> {
        libs::require_cublas()?;
        let blas = CudaBlas::new(stream).map_err(|e| Error::Cuda {
            context: "creating a cuBLAS handle".into(),
            detail: format!("{e:?}"),
        })?;
        Ok(Cublas { blas })
    }

    /// bf16 `A`, `B`, `C`; fp32 accumulation. Pointers are device addresses.
    pub fn gemm_bf16(&self, a: u64, b: u64, c: u64, shape: Shape) -> Result<()> {
        let (alpha, beta) = (1.0f32, 0.0f32);
        let (m, n, k) = (shape.m as i64, shape.n as i64, shape.k as i64);
        // SAFETY: the pointers address buffers of the sizes the shape implies, owned by the caller.
        let status = unsafe {
            sys::cublasGemmEx_64(
                *self.blas.handle(),
                cublasOperation_t::CUBLAS_OP_T,
                cublasOperation_t::CUBLAS_OP_N,
                n,
                m,
                k,
                &alpha as *const f32 as *const c_void,
                b as *const c_void,
                cudaDataType::CUDA_R_16BF,
                k,
                a as *const c_void,
                cudaDataType::CUDA_R_16BF,
                k,
                &beta as *const f32 as *const c_void,
                c as *mut c_void,
                cudaDataType::CUDA_R_16BF,
                n,
                cublasComputeType_t::CUBLAS_COMPUTE_32F,
                cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
            )
        };
        check(status, "cublasGemmEx (bf16)")
    }

    /// fp32 `A`, `B`, `C` (SGEMM, plain fp32 arithmetic: the handle's default math mode, no TF32).
    pub fn sgemm(&self, a: u64, b: u64, c: u64, shape: Shape) -> Result<()> {
        let (alpha, beta) = (1.0f32, 0.0f32);
        let (m, n, k) = (shape.m as i64, shape.n as i64, shape.k as i64);
        // SAFETY: as above, for fp32 buffers.
        let status = unsafe {
            sys::cublasSgemm_v2_64(
                *self.blas.handle(),
                cublasOperation_t::CUBLAS_OP_T,
                cublasOperation_t::CUBLAS_OP_N,
                n,
                m,
                k,
                &alpha,
                b as *const f32,
                k,
                a as *const f32,
                k,
                &beta,
                c as *mut f32,
                n,
            )
        };
        check(status, "cublasSgemm")
    }
}

impl Cublas {
    /// bf16 `A`, `B`, fp32 `C`, fp32 accumulation: the same GEMM as [`Cublas::gemm_bf16`] without the
    /// final rounding to bf16, for a tight comparison with an fp32-output kernel (step 11).
    pub fn gemm_bf16_f32_out(&self, a: u64, b: u64, c: u64, shape: Shape) -> Result<()> {
        let (alpha, beta) = (1.0f32, 0.0f32);
        let (m, n, k) = (shape.m as i64, shape.n as i64, shape.k as i64);
        // SAFETY: the pointers address buffers of the sizes the shape implies (C: fp32).
        let status = unsafe {
            sys::cublasGemmEx_64(
                *self.blas.handle(),
                cublasOperation_t::CUBLAS_OP_T,
                cublasOperation_t::CUBLAS_OP_N,
                n,
                m,
                k,
                &alpha as *const f32 as *const c_void,
                b as *const c_void,
                cudaDataType::CUDA_R_16BF,
                k,
                a as *const c_void,
                cudaDataType::CUDA_R_16BF,
                k,
                &beta as *const f32 as *const c_void,
                c as *mut c_void,
                cudaDataType::CUDA_R_32F,
                n,
                cublasComputeType_t::CUBLAS_COMPUTE_32F,
                cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
            )
        };
        check(status, "cublasGemmEx (bf16 in, fp32 out)")
    }
}

/// cuBLASLt fp8 GEMM with **tensorwise** scaling (one fp32 scale per operand, `SCALAR_32F`, here
/// 1.0): e4m3 `A` (M×K) and `B` (N×K), fp32 `C` (M×N), fp32 accumulation with the periodic promotion
/// cuBLAS does by default (`FAST_ACCUM` off). What Hopper's fp8 tensor cores give without any block
/// scaling: step 11's fp8 ceiling. Set up for one shape (layouts, algorithm, workspace).
pub struct Fp8Tensorwise {
    /// The type cuBLASLt writes C in.
    pub output: Fp8Output,
    handle: lt::cublasLtHandle_t,
    desc: lt::cublasLtMatmulDesc_t,
    layouts: [lt::cublasLtMatrixLayout_t; 3],
    algo: lt::cublasLtMatmulAlgo_t,
    workspace: cudarc::driver::CudaSlice<u8>,
    /// The tensor scales of A and B, an fp32 one each, each in its own allocation: cuBLASLt's
    /// heuristic never sees the pointers, but `cublasLtMatmul` answers `NOT_SUPPORTED` for a scale
    /// only 4-byte aligned (B's, when both shared one buffer), with fp32 and bf16 C alike.
    _scales: [cudarc::driver::CudaSlice<f32>; 2],
    stream: Arc<CudaStream>,
}

use cudarc::cublaslt::sys as lt;

/// The output type of the fp8 baseline. fp32 is step 11's; where cuBLASLt refuses it, the session
/// falls back to bf16 (into the same, larger, buffer) and says so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fp8Output {
    F32,
    Bf16,
}

impl Fp8Output {
    pub fn name(self) -> &'static str {
        match self {
            Fp8Output::F32 => "fp32",
            Fp8Output::Bf16 => "bf16",
        }
    }

    fn data_type(self) -> lt::cudaDataType {
        match self {
            Fp8Output::F32 => lt::cudaDataType::CUDA_R_32F,
            Fp8Output::Bf16 => lt::cudaDataType::CUDA_R_16BF,
        }
    }
}

fn check_lt(status: lt::cublasStatus_t, what: &str) -> Result<()> {
    if status == lt::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
        Ok(())
    } else {
        Err(Error::Cuda {
            context: what.to_string(),
            detail: format!("{status:?}"),
        })
    }
}

/// Workspace cuBLASLt may use: 32 MiB, as PyTorch gives it on Hopper.
const LT_WORKSPACE: usize = 32 << 20;

impl Fp8Tensorwise {
    /// Creates the handle, descriptors and workspace for `shape` and asks cuBLASLt's heuristic for an
    /// algorithm; an error (e.g. `NOT_SUPPORTED` for a shape or GPU without fp8) says which call.
    pub fn new(stream: Arc<CudaStream>, shape: Shape, output: Fp8Output) -> Result<Fp8Tensorwise> {
        use cudarc::driver::DevicePtr;
        libs::require_cublas()?;
        let workspace = stream
            .alloc_zeros::<u8>(LT_WORKSPACE)
            .map_err(Error::cuda("allocating the cuBLASLt workspace"))?;
        let scale = || {
            stream
                .clone_htod(&[1.0f32])
                .map_err(Error::cuda("uploading an fp8 tensor scale"))
        };
        let scales = [scale()?, scale()?];
        let (m, n, k) = (shape.m as u64, shape.n as u64, shape.k as u64);
        let mut this = Fp8Tensorwise {
            output,
            handle: std::ptr::null_mut(),
            desc: std::ptr::null_mut(),
            layouts: [std::ptr::null_mut(); 3],
            // SAFETY: plain data, filled by the heuristic below.
            algo: unsafe { std::mem::zeroed() },
            workspace,
            _scales: scales,
            stream,
        };
        // SAFETY: each call gets valid out-pointers and attribute buffers of the stated sizes; the
        // handles are destroyed in Drop (null ones are skipped).
        unsafe {
            check_lt(lt::cublasLtCreate(&mut this.handle), "cublasLtCreate")?;
            check_lt(
                lt::cublasLtMatmulDescCreate(
                    &mut this.desc,
                    lt::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                    lt::cudaDataType::CUDA_R_32F,
                ),
                "cublasLtMatmulDescCreate",
            )?;
            // Column-major, as cuBLAS sees our row-major matrices: C (M×N) is Cᵀ = B·Aᵀ (N×M), "TN".
            let set = |attr, value: *const c_void, size| {
                check_lt(
                    lt::cublasLtMatmulDescSetAttribute(this.desc, attr, value, size),
                    "cublasLtMatmulDescSetAttribute",
                )
            };
            let (t, nt) = (cublasOperation_t::CUBLAS_OP_T, cublasOperation_t::CUBLAS_OP_N);
            set(
                lt::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_TRANSA,
                &t as *const _ as *const c_void,
                std::mem::size_of_val(&t),
            )?;
            set(
                lt::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_TRANSB,
                &nt as *const _ as *const c_void,
                std::mem::size_of_val(&nt),
            )?;
            let (a_scale, _sync_a) = this._scales[0].device_ptr(&this.stream);
            let (b_scale, _sync_b) = this._scales[1].device_ptr(&this.stream);
            set(
                lt::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
                &a_scale as *const u64 as *const c_void,
                8,
            )?;
            set(
                lt::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
                &b_scale as *const u64 as *const c_void,
                8,
            )?;
            let layout = |out: &mut lt::cublasLtMatrixLayout_t, ty, rows, cols, ld| {
                check_lt(
                    lt::cublasLtMatrixLayoutCreate(out, ty, rows, cols, ld),
                    "cublasLtMatrixLayoutCreate",
                )
            };
            let [la, lb, lc] = &mut this.layouts;
            // cuBLAS's A is our B: K×N column-major (ld K), transposed; its B is our A, K×M.
            layout(la, lt::cudaDataType::CUDA_R_8F_E4M3, k, n, k as i64)?;
            layout(lb, lt::cudaDataType::CUDA_R_8F_E4M3, k, m, k as i64)?;
            layout(lc, output.data_type(), n, m, n as i64)?;
            let mut preference: lt::cublasLtMatmulPreference_t = std::ptr::null_mut();
            check_lt(
                lt::cublasLtMatmulPreferenceCreate(&mut preference),
                "cublasLtMatmulPreferenceCreate",
            )?;
            let bytes = LT_WORKSPACE as u64;
            let status = lt::cublasLtMatmulPreferenceSetAttribute(
                preference,
                lt::cublasLtMatmulPreferenceAttributes_t::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                &bytes as *const u64 as *const c_void,
                8,
            );
            let mut result: lt::cublasLtMatmulHeuristicResult_t = std::mem::zeroed();
            let mut found = 0;
            let heuristic = if status == lt::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
                lt::cublasLtMatmulAlgoGetHeuristic(
                    this.handle,
                    this.desc,
                    this.layouts[0],
                    this.layouts[1],
                    this.layouts[2],
                    this.layouts[2],
                    preference,
                    1,
                    &mut result,
                    &mut found,
                )
            } else {
                status
            };
            lt::cublasLtMatmulPreferenceDestroy(preference);
            check_lt(heuristic, "cublasLtMatmulAlgoGetHeuristic (fp8 e4m3, tensorwise)")?;
            if found < 1 {
                return Err(Error::Cuda {
                    context: "cublasLtMatmulAlgoGetHeuristic (fp8 e4m3, tensorwise)".into(),
                    detail: "no algorithm for this shape".into(),
                });
            }
            this.algo = result.algo;
        }
        Ok(this)
    }

    /// Enqueues `C = A·Bᵀ` on the stream: `a`, `b` e4m3 device pointers, `c` fp32.
    pub fn gemm(&self, a: u64, b: u64, c: u64) -> Result<()> {
        use cudarc::driver::DevicePtr;
        let (alpha, beta) = (1.0f32, 0.0f32);
        // The workspace's address (no copy of it: a clone of a CudaSlice would allocate and copy).
        let (ws, _sync) = self.workspace.device_ptr(&self.stream);
        // SAFETY: the descriptors describe buffers of the shape given to `new`; the workspace is used
        // only by these calls, all on this one stream; the stream outlives the call.
        let status = unsafe {
            lt::cublasLtMatmul(
                self.handle,
                self.desc,
                &alpha as *const f32 as *const c_void,
                b as *const c_void,
                self.layouts[0],
                a as *const c_void,
                self.layouts[1],
                &beta as *const f32 as *const c_void,
                c as *const c_void,
                self.layouts[2],
                c as *mut c_void,
                self.layouts[2],
                &self.algo,
                ws as *mut c_void,
                LT_WORKSPACE,
                self.stream.cu_stream() as lt::cudaStream_t,
            )
        };
        check_lt(status, "cublasLtMatmul (fp8 e4m3, tensorwise)")
    }
}

impl Drop for Fp8Tensorwise {
    fn drop(&mut self) {
        // SAFETY: each handle was created above (null ones never were).
        unsafe {
            for layout in self.layouts {
                if !layout.is_null() {
                    lt::cublasLtMatrixLayoutDestroy(layout);
                }
            }
            if !self.desc.is_null() {
                lt::cublasLtMatmulDescDestroy(self.desc);
            }
            if !self.handle.is_null() {
                lt::cublasLtDestroy(self.handle);
            }
        }
    }
}

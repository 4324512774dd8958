//! cuBLAS, the yardstick: the same `C = A · Bᵀ` in bf16 (fp32 compute) and in fp32 (SGEMM).
//!
//! cuBLAS is column-major. Our row-major M×N `C` is, read column-major, the N×M matrix `Cᵀ = B · Aᵀ`;
//! row-major `B` (N×K) read column-major is `Bᵀ` (K×N), so it enters transposed, and row-major `A`
//! read column-major is already `Aᵀ`. Hence `gemm(T, N, n, m, k, B, A, C)`, the "TN" case cuBLAS
//! serves best.

use crate::error::{Error, Result};
use crate::libs;
use crate::problem::Shape;
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

//! cuBLAS, the yardstick: the same `C = A · Bᵀ` in bf16 (fp32 compute) and in fp32 (SGEMM).
//!
//! cuBLAS is column-major. Our row-major M×N `C` is, read column-major, the N×M matrix `Cᵀ = B · Aᵀ`;
//! row-major `B` (N×K) read column-major is `Bᵀ` (K×N), so it enters transposed, and row-major `A`
//! read column-major is already `Aᵀ`. Hence `gemm(T, N, n, m, k, B, A, C)`, the "TN" case cuBLAS
//! serves best.

use crate::device::libs::{self, symbol_table, Described, Library, Loaded, Version};
use crate::error::{Error, Result};
use crate::shape::Shape;
use cudarc::cublas::sys::{cublasComputeType_t, cublasGemmAlgo_t, cublasOperation_t, cudaDataType};
use cudarc::driver::CudaStream;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::{Arc, OnceLock};

/// A cuBLAS handle.
type Handle = *mut c_void;
/// `cublasStatus_t`, read as the integer it is (a status a binding does not list is no UB).
type Status = c_int;
/// `CUBLAS_STATUS_SUCCESS`.
const SUCCESS: Status = 0;

symbol_table! {
    /// The cuBLAS functions this crate calls. Their signatures are the same in cuBLAS 12 and 13
    /// (cudarc's bindings declare each once for both); tests/cuda_libs.rs finds each in both.
    pub struct CublasApi {
        create = "cublasCreate_v2": fn(*mut Handle) -> Status;
        destroy = "cublasDestroy_v2": fn(Handle) -> Status;
        set_stream = "cublasSetStream_v2": fn(Handle, *mut c_void) -> Status;
        /// `libraryPropertyType`: 0 major, 1 minor, 2 patch.
        property = "cublasGetProperty": fn(c_int, *mut c_int) -> Status;
        status_name = "cublasGetStatusName": fn(Status) -> *const c_char;
        gemm_ex = "cublasGemmEx_64": fn(
            Handle,
            cublasOperation_t,
            cublasOperation_t,
            i64,
            i64,
            i64,
            *const c_void,
            *const c_void,
            cudaDataType,
            i64,
            *const c_void,
            cudaDataType,
            i64,
            *const c_void,
            *mut c_void,
            cudaDataType,
            i64,
            cublasComputeType_t,
            cublasGemmAlgo_t,
        ) -> Status;
        sgemm = "cublasSgemm_v2_64": fn(
            Handle,
            cublasOperation_t,
            cublasOperation_t,
            i64,
            i64,
            i64,
            *const f32,
            *const f32,
            i64,
            *const f32,
            i64,
            *const f32,
            *mut f32,
            i64,
        ) -> Status;
    }
}

symbol_table! {
    /// The cuBLASLt functions this crate calls (the fp8 baseline of step 11), the same in 12 and 13.
    pub struct CublasLtApi {
        version = "cublasLtGetVersion": fn() -> usize;
        create = "cublasLtCreate": fn(*mut lt::cublasLtHandle_t) -> Status;
        destroy = "cublasLtDestroy": fn(lt::cublasLtHandle_t) -> Status;
        desc_create = "cublasLtMatmulDescCreate": fn(
            *mut lt::cublasLtMatmulDesc_t,
            lt::cublasComputeType_t,
            lt::cudaDataType,
        ) -> Status;
        desc_destroy = "cublasLtMatmulDescDestroy": fn(lt::cublasLtMatmulDesc_t) -> Status;
        desc_set = "cublasLtMatmulDescSetAttribute": fn(
            lt::cublasLtMatmulDesc_t,
            lt::cublasLtMatmulDescAttributes_t,
            *const c_void,
            usize,
        ) -> Status;
        layout_create = "cublasLtMatrixLayoutCreate": fn(
            *mut lt::cublasLtMatrixLayout_t,
            lt::cudaDataType,
            u64,
            u64,
            i64,
        ) -> Status;
        layout_destroy = "cublasLtMatrixLayoutDestroy": fn(lt::cublasLtMatrixLayout_t) -> Status;
        preference_create = "cublasLtMatmulPreferenceCreate": fn(*mut lt::cublasLtMatmulPreference_t) -> Status;
        preference_set = "cublasLtMatmulPreferenceSetAttribute": fn(
            lt::cublasLtMatmulPreference_t,
            lt::cublasLtMatmulPreferenceAttributes_t,
            *const c_void,
            usize,
        ) -> Status;
        preference_destroy = "cublasLtMatmulPreferenceDestroy": fn(lt::cublasLtMatmulPreference_t) -> Status;
        heuristic = "cublasLtMatmulAlgoGetHeuristic": fn(
            lt::cublasLtHandle_t,
            lt::cublasLtMatmulDesc_t,
            lt::cublasLtMatrixLayout_t,
            lt::cublasLtMatrixLayout_t,
            lt::cublasLtMatrixLayout_t,
            lt::cublasLtMatrixLayout_t,
            lt::cublasLtMatmulPreference_t,
            c_int,
            *mut lt::cublasLtMatmulHeuristicResult_t,
            *mut c_int,
        ) -> Status;
        matmul = "cublasLtMatmul": fn(
            lt::cublasLtHandle_t,
            lt::cublasLtMatmulDesc_t,
            *const c_void,
            *const c_void,
            lt::cublasLtMatrixLayout_t,
            *const c_void,
            lt::cublasLtMatrixLayout_t,
            *const c_void,
            *const c_void,
            lt::cublasLtMatrixLayout_t,
            *mut c_void,
            lt::cublasLtMatrixLayout_t,
            *const lt::cublasLtMatmulAlgo_t,
            *mut c_void,
            usize,
            *mut c_void,
        ) -> Status;
    }
}

/// cuBLAS and cuBLASLt, of one CUDA major.
pub struct CublasApis {
    pub blas: CublasApi,
    pub lt: CublasLtApi,
}

/// The stems of cuBLAS's files, in load order: libcublas needs libcublasLt (the wheels set no
/// RUNPATH, so it must be loaded first, from the same folder).
pub const STEMS: [&str; 2] = ["cublasLt", "cublas"];

/// Resolves both tables in the libraries loaded from [`STEMS`].
pub fn resolve(files: &[&'static libloading::Library]) -> std::result::Result<CublasApis, String> {
    Ok(CublasApis {
        lt: CublasLtApi::resolve(files[0]).map_err(|e| format!("(cuBLASLt) {e}"))?,
        blas: CublasApi::resolve(files[1])?,
    })
}

/// The version cuBLAS reports, `13.1.0`.
pub fn describe(apis: &CublasApis) -> Described {
    let property = |which: c_int| {
        let mut value = 0;
        // SAFETY: one out-pointer to a live integer.
        unsafe { (apis.blas.property)(which, &mut value) };
        value.max(0) as u32
    };
    let (major, minor, patch) = (property(0), property(1), property(2));
    Described {
        version: Version::new(major, minor),
        version_text: format!("{major}.{minor}.{patch}"),
        address: apis.blas.create as *const c_void,
    }
}

/// Whether cuBLAS and cuBLASLt can be loaded (of a major this driver runs).
pub fn present() -> bool {
    api().is_ok()
}

/// cuBLAS and cuBLASLt, loaded once for the process: of the CUDA major the driver runs (`device::libs`).
pub fn api() -> Result<&'static Loaded<CublasApis>> {
    static CUBLAS: OnceLock<std::result::Result<Loaded<CublasApis>, libs::LoadFailure>> = OnceLock::new();
    CUBLAS
        .get_or_init(|| libs::load(Library::Cublas, &STEMS, resolve, describe))
        .as_ref()
        .map_err(|failure| failure.to_error())
}

/// A cuBLAS handle bound to one stream.
pub struct Cublas {
    api: &'static CublasApi,
    handle: Handle,
    _stream: Arc<CudaStream>,
}

impl Drop for Cublas {
    fn drop(&mut self) {
        // SAFETY: created in `new`, destroyed once.
        unsafe { (self.api.destroy)(self.handle) };
    }
}

fn check(api: &CublasApi, status: Status, what: &str) -> Result<()> {
    if status == SUCCESS {
        return Ok(());
    }
    // SAFETY: returns a static string for any status.
    let name = unsafe { (api.status_name)(status) };
    let detail = if name.is_null() {
        format!("status {status}")
    } else {
        // SAFETY: NUL-terminated, static.
        unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned()
    };
    Err(Error::Cuda {
        context: what.to_string(),
        detail,
    })
}

impl Cublas {
    pub fn new(stream: Arc<CudaStream>) -> Result<Cublas> {
        let api = &api()?.api.blas;
        stream
            .context()
            .bind_to_thread()
            .map_err(Error::cuda("making the context current for cuBLAS"))?;
        let mut handle: Handle = std::ptr::null_mut();
        // SAFETY: one out-pointer; the handle is destroyed in Drop.
        check(api, unsafe { (api.create)(&mut handle) }, "creating a cuBLAS handle")?;
        let this = Cublas {
            api,
            handle,
            _stream: stream.clone(),
        };
        // SAFETY: the stream outlives the handle (held above).
        let status = unsafe { (api.set_stream)(handle, stream.cu_stream() as *mut c_void) };
        check(api, status, "setting cuBLAS's stream")?;
        Ok(this)
    }

    /// bf16 `A`, `B`, `C`; fp32 accumulation. Pointers are device addresses.
    pub fn gemm_bf16(&self, a: u64, b: u64, c: u64, shape: Shape) -> Result<()> {
        let (alpha, beta) = (1.0f32, 0.0f32);
        let (m, n, k) = (shape.m as i64, shape.n as i64, shape.k as i64);
        // SAFETY: the pointers address buffers of the sizes the shape implies, owned by the caller.
        let status = unsafe {
            (self.api.gemm_ex)(
                self.handle,
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
        check(self.api, status, "cublasGemmEx (bf16)")
    }

    /// fp32 `A`, `B`, `C` (SGEMM, plain fp32 arithmetic: the handle's default math mode, no TF32).
    pub fn sgemm(&self, a: u64, b: u64, c: u64, shape: Shape) -> Result<()> {
        let (alpha, beta) = (1.0f32, 0.0f32);
        let (m, n, k) = (shape.m as i64, shape.n as i64, shape.k as i64);
        // SAFETY: as above, for fp32 buffers.
        let status = unsafe {
            (self.api.sgemm)(
                self.handle,
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
        check(self.api, status, "cublasSgemm")
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
            (self.api.gemm_ex)(
                self.handle,
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
        check(self.api, status, "cublasGemmEx (bf16 in, fp32 out)")
    }
}

/// cuBLASLt fp8 GEMM with **tensorwise** scaling (one fp32 scale per operand, `SCALAR_32F`, here
/// 1.0): e4m3 `A` (M×K) and `B` (N×K), fp32 `C` (M×N), fp32 accumulation with the periodic promotion
/// cuBLAS does by default (`FAST_ACCUM` off). What Hopper's fp8 tensor cores give without any block
/// scaling: step 11's fp8 ceiling. Set up for one shape (layouts, algorithm, workspace).
pub struct Fp8Tensorwise {
    /// The type cuBLASLt writes C in.
    pub output: Fp8Output,
    api: &'static CublasLtApi,
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

fn check_lt(status: Status, what: &str) -> Result<()> {
    // cuBLASLt's statuses are cuBLAS's; its name function lives in libcublas.
    check(&api()?.api.blas, status, what)
}

/// Workspace cuBLASLt may use: 32 MiB, as PyTorch gives it on Hopper.
const LT_WORKSPACE: usize = 32 << 20;

impl Fp8Tensorwise {
    /// Creates the handle, descriptors and workspace for `shape` and asks cuBLASLt's heuristic for an
    /// algorithm; an error (e.g. `NOT_SUPPORTED` for a shape or GPU without fp8) says which call.
    pub fn new(stream: Arc<CudaStream>, shape: Shape, output: Fp8Output) -> Result<Fp8Tensorwise> {
        use cudarc::driver::DevicePtr;
        let api = &api()?.api.lt;
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
            api,
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
            check_lt((api.create)(&mut this.handle), "cublasLtCreate")?;
            check_lt(
                (api.desc_create)(
                    &mut this.desc,
                    lt::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                    lt::cudaDataType::CUDA_R_32F,
                ),
                "cublasLtMatmulDescCreate",
            )?;
            // Column-major, as cuBLAS sees our row-major matrices: C (M×N) is Cᵀ = B·Aᵀ (N×M), "TN".
            let set = |attr, value: *const c_void, size| {
                check_lt(
                    (api.desc_set)(this.desc, attr, value, size),
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
                    (api.layout_create)(out, ty, rows, cols, ld),
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
                (api.preference_create)(&mut preference),
                "cublasLtMatmulPreferenceCreate",
            )?;
            let bytes = LT_WORKSPACE as u64;
            let status = (api.preference_set)(
                preference,
                lt::cublasLtMatmulPreferenceAttributes_t::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                &bytes as *const u64 as *const c_void,
                8,
            );
            let mut result: lt::cublasLtMatmulHeuristicResult_t = std::mem::zeroed();
            let mut found = 0;
            let heuristic = if status == SUCCESS {
                (api.heuristic)(
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
            (api.preference_destroy)(preference);
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
            (self.api.matmul)(
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
                self.stream.cu_stream() as *mut c_void,
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
                    (self.api.layout_destroy)(layout);
                }
            }
            if !self.desc.is_null() {
                (self.api.desc_destroy)(self.desc);
            }
            if !self.handle.is_null() {
                (self.api.destroy)(self.handle);
            }
        }
    }
}

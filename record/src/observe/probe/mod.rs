//! Stage "observe": goldgate's in-process allocator probe for Python jobs — installing the
//! embedded `sitecustomize.py` into a job folder and reading back what each rank recorded.

pub mod install;
pub mod read;

#[cfg(test)]
mod python_tests;
#[cfg(test)]
mod torch_tests;

//! Stage "compare": what unchanged jobs say about the rules — where their noise comes from
//! (`components`), the tolerance each metric needs (`calibrate`) and what each rule can see
//! through the noise (`power`).

pub mod calibrate;
pub(crate) mod components;
pub mod power;

//! The task status machine, as in Roo Code (the protocol's type).

pub use roost_protocol::task::TaskStatus;

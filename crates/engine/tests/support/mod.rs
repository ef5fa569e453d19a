pub mod statements;
pub mod stores;

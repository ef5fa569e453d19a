pub mod statements;

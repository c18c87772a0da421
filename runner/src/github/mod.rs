//! Stage "report": the sticky pull-request comment bot.

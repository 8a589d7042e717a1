"""Teams: accounts and sign-in, review tasks for annotators, their agreement, and adjudication."""

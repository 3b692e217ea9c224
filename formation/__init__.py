"""Formation: turning stored turns into cited facts, with every refusal recorded."""

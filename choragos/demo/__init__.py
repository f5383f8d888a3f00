"""The scripted demo team ``choragos demo`` runs: agents that really delegate and report."""

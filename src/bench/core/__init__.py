"""Shared pieces every study uses: config, measurement, records with provenance, plotting, devices."""

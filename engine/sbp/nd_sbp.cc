// placeholder: implemented by the session building nd_sbp
